(* What why3_tool.ml needs from Why3's API that differs between versions: this is Why3 1.5
   (Debian 12). why3_tool.py compiles it as Why3_compat, beside the tool; its twin
   why3_compat_1_8.ml has the same values for Why3 1.8 (Debian 13). *)

open Why3

(* A location's file, line and column (where it starts). *)
let start loc =
  let file, line, column, _ = Loc.get loc in
  (file, line, column)

(* Why3's Coq printer. *)
let coq_driver main env = Whyconf.load_driver_raw main env "coq" []

(* A configured prover's driver. *)
let prover_driver main env prover = Whyconf.load_driver main env prover

(* [task] sent to a prover with [seconds] of wall clock and [megabytes] of memory. *)
let prove_task main ~command ~seconds ~megabytes driver task =
  let limit = { Call_provers.empty_limit with limit_time = seconds; limit_mem = megabytes } in
  let libdir = Whyconf.libdir main and datadir = Whyconf.datadir main in
  Driver.prove_task ~command ~libdir ~datadir ~limit driver task

let interrupt_call main call = Call_provers.interrupt_call ~libdir:(Whyconf.libdir main) call
