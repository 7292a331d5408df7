(* An answer that only applies the core's values to each other, as the fields the native
   checker evaluates without compiling it (see proofeval_eval.ml): in prefix order,
   "n" NAME, "s" TEXT, "l" COUNT ITEMS..., "p" A B, "a" COUNT HEAD ARGS.... Called on an
   answer that was parsed and deny-checked. Each name must be the core's own value in
   the environment answers are typed in (a context that defines the name again makes it
   that context's, and the answer is compiled); anything else (a function, a `let`, a
   qualified name, a label, a number) is None, and the answer is compiled. *)

let core = "Proofeval_hol_core"
let max_depth = 200

let core_value env name =
  match Env.lookup_value ~loc:Location.none (Longident.Lident name) env with
  | Path.Pdot (Path.Pident m, n), _ -> Ident.name m = core && n = name
  | _ -> false
  | exception _ -> false

exception Not_applied

let rec fields env depth (e : Parsetree.expression) =
  if depth > max_depth || e.pexp_attributes <> [] then raise Not_applied;
  let sub = fields env (depth + 1) in
  match e.pexp_desc with
  | Pexp_ident { txt = Longident.Lident name; _ } when core_value env name -> [ "n"; name ]
  | Pexp_constant c -> (
      match Proofeval_ocaml.string_constant c with Some s -> [ "s"; s ] | None -> raise Not_applied)
  | Pexp_tuple [ a; b ] -> ("p" :: sub a) @ sub b
  | Pexp_construct ({ txt = Longident.Lident ("::" | "[]"); _ }, _) ->
      let items = list_items e in
      ("l" :: string_of_int (List.length items) :: List.concat_map sub items)
  | Pexp_apply (f, args) when List.for_all (fun (l, _) -> l = Asttypes.Nolabel) args ->
      ("a" :: string_of_int (List.length args) :: sub f) @ List.concat_map (fun (_, a) -> sub a) args
  | _ -> raise Not_applied

and list_items (e : Parsetree.expression) =
  match e.pexp_desc with
  | Pexp_construct ({ txt = Longident.Lident "[]"; _ }, None) -> []
  | Pexp_construct ({ txt = Longident.Lident "::"; _ }, Some { pexp_desc = Pexp_tuple [ x; rest ]; _ })
    ->
      x :: list_items rest
  | _ -> raise Not_applied

let of_expression env e = match fields env 0 e with f -> Some f | exception Not_applied -> None
