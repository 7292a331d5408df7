(* Where a linked answer or string leaves its value (see proofeval_parse). *)
open Proofeval_hol_core

let tactic : (unit -> tactic) option ref = ref None
let string : (unit -> string) option ref = ref None
