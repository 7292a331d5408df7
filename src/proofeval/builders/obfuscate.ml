(* Reprinting a benchmark query with the type of every variable and constant, for
   `proofeval obfuscate`. Loaded (HOL syntax) into a warm process that has the query's
   context; proofeval calls [proofeval_obfuscate goal] and reads "OK\n<text>" or
   "FAIL\n<why>". The new text is kept only when it parses back, in the same context, to
   a term alpha-equivalent to the goal. *)

(* Like HOL Light's own printing of atoms (printer.ml), with the type attached: the
   same as print_types_of_subterms := 2 in newer HOL Light. *)
let proofeval_print_typed_atom =
  let reverse_interface (s0, ty0) =
    if not !reverse_interface_mapping then s0
    else
      try fst (find (fun (s, (s', ty)) -> s' = s0 && can (type_match ty ty0) []) !the_interface)
      with Failure _ -> s0
  in
  fun fmt tm ->
    let name =
      match tm with
      | Var (s, _) -> s
      | Const (s, ty) -> reverse_interface (s, ty)
      | _ -> failwith "not an atom"
    in
    let name =
      if parses_as_binder name || can get_infix_status name || is_prefix name
      then "(" ^ name ^ ")" else name
    in
    (* "&:" would lex as one symbol *)
    let sep = if isalnum (String.sub name (String.length name - 1) 1) then ":" else " :" in
    Format.pp_print_string fmt ("(" ^ name ^ sep ^ string_of_type (type_of tm) ^ ")");;

let proofeval_typed_string tm =
  install_user_printer ("proofeval_typed_atom", proofeval_print_typed_atom);
  let text = try string_of_term tm with e -> (delete_user_printer "proofeval_typed_atom"; raise e) in
  delete_user_printer "proofeval_typed_atom";
  text;;

(* Type variables invented by type inference (":?123") cannot be written back: give
   them fresh ordinary names, as the official tool does. *)
let proofeval_name_invented_types tm =
  let tyvars = type_vars_in_term tm in
  let invented = filter (fun ty -> (dest_vartype ty).[0] = '?') tyvars in
  let taken = map dest_vartype tyvars in
  let rec fresh n = let s = "arbty" ^ string_of_int n in if mem s taken then fresh (n + 1) else (s, n + 1) in
  let _, theta =
    itlist (fun ty (n, acc) -> let s, n' = fresh n in (n', (mk_vartype s, ty) :: acc)) invented (0, [])
  in
  inst theta tm;;

let proofeval_obfuscate goal =
  try
    let tm = proofeval_name_invented_types goal in
    let text = proofeval_typed_string tm in
    match parse_term text with
    | back when aconv back tm -> "OK\n`" ^ text ^ "`"
    | _ -> "FAIL\nthe reprinted term parses to a different term"
    | exception Failure why -> "FAIL\nthe reprinted term does not parse: " ^ why
    | exception Noparse -> "FAIL\nthe reprinted term does not parse"
  with Failure why -> "FAIL\n" ^ why;;
