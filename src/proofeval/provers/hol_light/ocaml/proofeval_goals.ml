(* Proof states on HOL Light's side (HOL Light syntax, loaded after proofeval_replay.ml).

   A state is a list of goals held as plain data: each goal's hypotheses (label and
   term) and conclusion. A tactic runs on the first goal in an attempt's confined child,
   as HOL Light's `e` applies it; the child sends the new goals back as terms, which the
   session's process rebuilds with the kernel's own constructors (mk_var, mk_mconst,
   mk_comb, mk_abs: an ill-typed or forged term does not rebuild). A hypothesis is held
   as its conclusion and given back to the next tactic as ASSUME of it; the proof itself
   is never taken from a state: finish checks the whole path with the ordinary checker.

   Records, one a line, each naming earlier ones by number; names in hex:
     Y n V name | Y n A name k ty1 .. tyk               types
     M n V name ty | M n C name ty | M n A f x | M n L v body   terms
     G k label1 hyp1 .. labelk hypk concl                 one goal *)

module Proofeval_goals = struct
  type sgoal = (string * term) list * term

  let start (t : term) : sgoal list = [ ([], t) ]

  let to_hol ((asl, w) : sgoal) : goal = (List.map (fun (l, h) -> (l, ASSUME h)) asl, w)
  let of_hol ((asl, w) : goal) : sgoal = (List.map (fun (l, th) -> (l, concl th)) asl, w)

  (* The tactic on the first goal; its subgoals come first, the others follow with the
     instantiation of any metavariable it chose, as `by` does. *)
  let apply (tac : tactic) (gs : sgoal list) : sgoal list * int =
    match gs with
    | [] -> failwith "no goals are left"
    | g :: rest ->
        let (_, inst), subgoals, _ = tac (to_hol g) in
        let rest' =
          match inst with
          | [], [], [] -> rest
          | _ -> List.map (fun g -> of_hol (inst_goal inst (to_hol g))) rest in
        (List.map of_hol subgoals @ rest', List.length subgoals)

  let count (gs : sgoal list) = List.length gs

  (* Whether the axioms changed since [snapshot] was called. *)
  let snapshot () = let before = axioms () in fun () -> axioms () != before

  let backquote = String.make 1 (Char.chr 96)
  let quoted t = backquote ^ string_of_term t ^ backquote

  (* A goal as print_goal shows it: numbered hypotheses, then the conclusion. *)
  let show_goal ((asl, w) : sgoal) =
    let hyp i (l, h) =
      Printf.sprintf "%3d [%s]%s" i (quoted h) (if l = "" then "" else " (" ^ l ^ ")") in
    String.concat "\n" (List.mapi hyp (List.rev asl) @ [ quoted w ])

  let show (gs : sgoal list) = List.map show_goal gs

  let hex_digits = "0123456789abcdef"

  let hex s =
    String.init (2 * String.length s) (fun i ->
      let c = Char.code s.[i / 2] in
      hex_digits.[if i mod 2 = 0 then c lsr 4 else c land 15])

  let unhex s =
    let n = String.length s in
    if n mod 2 <> 0 then failwith "odd hex" else
    String.init (n / 2) (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

  (* A decimal number as the writer writes it: digits, no sign, no leading zero. *)
  let natural s =
    let n = String.length s in
    if n = 0 || n > 18 || (n > 1 && s.[0] = '0') then None else
    let rec go i acc =
      if i = n then Some acc
      else match s.[i] with
        | '0' .. '9' as c -> go (i + 1) (10 * acc + Char.code c - 48)
        | _ -> None in
    go 0 0

  let number s =
    match natural s with
    | Some n when n > 0 -> n
    | _ -> failwith ("not a record number: " ^ s)

  let count_of s =
    match natural s with Some n -> n | None -> failwith ("not a count: " ^ s)

  (* One record: words separated by spaces, a line each. *)
  let put out words =
    List.iteri (fun i w -> if i > 0 then Buffer.add_char out ' '; Buffer.add_string out w) words;
    Buffer.add_char out '\n'

  let get table what s =
    try Hashtbl.find table (number s)
    with Not_found -> failwith ("no earlier " ^ what ^ " " ^ s)

  (* ---- in the child: the goals as records ---- *)

  let encode (gs : sgoal list) : string =
    let out = Buffer.create 4096 and next = ref 0 in
    let tys = Hashtbl.create 64 and tms = Hashtbl.create 1024 in
    let record kind words =
      incr next; put out (kind :: string_of_int !next :: words); !next in
    let rec ty t =
      try Hashtbl.find tys t with Not_found ->
        let i =
          if is_vartype t then record "Y" [ "V"; hex (dest_vartype t) ]
          else
            let name, args = dest_type t in
            let ids = List.map (fun a -> string_of_int (ty a)) args in
            record "Y" ("A" :: hex name :: string_of_int (List.length ids) :: ids) in
        Hashtbl.add tys t i; i in
    let rec tm t =
      try Hashtbl.find tms t with Not_found ->
        let words =
          if is_var t then let n, y = dest_var t in [ "V"; hex n; string_of_int (ty y) ]
          else if is_const t then let n, y = dest_const t in [ "C"; hex n; string_of_int (ty y) ]
          else if is_comb t then
            let f, x = dest_comb t in
            let fi = tm f in let xi = tm x in [ "A"; string_of_int fi; string_of_int xi ]
          else
            let v, b = dest_abs t in
            let vi = tm v in let bi = tm b in [ "L"; string_of_int vi; string_of_int bi ] in
        let i = record "M" words in
        Hashtbl.add tms t i; i in
    let goal (asl, w) =
      let hyps = List.concat_map (fun (l, h) -> [ hex l; string_of_int (tm h) ]) asl in
      let wi = tm w in
      put out ("G" :: string_of_int (List.length asl) :: hyps @ [ string_of_int wi ]) in
    List.iter goal gs;
    Buffer.contents out

  (* ---- in the session's process: rebuilt through the kernel, trusting nothing ---- *)

  (* Rebuilding runs where no deadline can interrupt it (the session's process, or the
     context's for a statement), so its cost is bounded here. The kernel compares types
     with OCaml's structural equality (mk_mconst's `type_of con = ty`), which does not
     share: a type made with sharing in n records may have 2^n nodes. Such a type is
     refused; every other record costs at most a walk of the terms and types before it,
     and the CPU clock is read after each. *)
  let max_type_nodes = 1 lsl 20

  exception Too_costly of string

  let decode_within (budget : float) (text : string) : sgoal list =
    let stop = Sys.time () +. budget in
    let tys = Hashtbl.create 64 and tms = Hashtbl.create 1024 and goals = ref [] in
    let sizes = Hashtbl.create 64 in
    let fresh table n v =
      let i = number n in
      if Hashtbl.mem table i then failwith ("record " ^ n ^ " twice") else Hashtbl.add table i v in
    let ty = get tys "type" and tm = get tms "term" in
    let sized n args =
      let size = List.fold_left (fun acc a -> acc + Hashtbl.find sizes (number a)) 1 args in
      if size > max_type_nodes then
        raise (Too_costly (Printf.sprintf "a type of more than %d nodes" max_type_nodes));
      Hashtbl.replace sizes (number n) size in
    let constants = Hashtbl.create 64 in
    let constant name y =
      try Hashtbl.find constants (name, y) with Not_found ->
        let c = mk_mconst (unhex name, ty y) in Hashtbl.add constants (name, y) c; c in
    let boolean s =
      let t = tm s in if type_of t = bool_ty then t else failwith "a goal that is not a formula" in
    let rec hyps = function
      | [ w ] -> ([], boolean w)
      | l :: h :: rest -> let asl, w = hyps rest in ((unhex l, boolean h) :: asl, w)
      | _ -> failwith "malformed goal" in
    let record line =
      match String.split_on_char ' ' line with
      | [ "Y"; n; "V"; name ] -> fresh tys n (mk_vartype (unhex name)); sized n []
      | "Y" :: n :: "A" :: name :: k :: args when List.length args = count_of k ->
          fresh tys n (mk_type (unhex name, List.map ty args)); sized n args
      | [ "M"; n; "V"; name; y ] -> fresh tms n (mk_var (unhex name, ty y))
      | [ "M"; n; "C"; name; y ] -> fresh tms n (constant name y)
      | [ "M"; n; "A"; f; x ] -> fresh tms n (mk_comb (tm f, tm x))
      | [ "M"; n; "L"; v; b ] -> fresh tms n (mk_abs (tm v, tm b))
      | "G" :: k :: rest when List.length rest = 2 * count_of k + 1 -> goals := hyps rest :: !goals
      | _ -> failwith "malformed record" in
    let lines = String.split_on_char '\n' text in
    List.iteri
      (fun i line ->
        if Sys.time () > stop then
          raise (Too_costly (Printf.sprintf "more than %gs of CPU" budget));
        if line <> "" then
          try record line with Failure why | Invalid_argument why ->
            failwith (Printf.sprintf "record %d: %s" (i + 1) why))
      lines;
    List.rev !goals

  (* The goals, or Error why they cost too much to rebuild within [budget] CPU seconds;
     Failure if the records are not well-formed goals. *)
  let decode budget text =
    try Ok (decode_within budget text) with Too_costly why -> Error why

  (* ---- a statement: one term, sent as a goal with no hypotheses ---- *)

  let encode_term (t : term) : string =
    if type_of t <> bool_ty then failwith ("its type is " ^ string_of_type (type_of t))
    else encode (start t)

  let decode_term budget (text : string) =
    match decode budget text with
    | Ok [ ([], t) ] -> Ok t
    | Ok _ -> failwith "not one term"
    | Error why -> Error why

  (* ---- search, in a confined child ---- *)

  let find_theorems (pattern : term) (limit : int) : string list =
    let found = search [ pattern ] in
    let rec first n = function
      | [] -> []
      | _ when n = 0 -> []
      | (name, th) :: rest -> (name ^ ": " ^ string_of_thm th) :: first (n - 1) rest in
    first limit found
end;;
