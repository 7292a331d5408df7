(* The audit behind layer 1 of the HOL Light checker (tests/test_hol_audit.py): reads the
   compiled interface (.cmi) of every module on Proofeval_deny's allow-list and reports
   each value an answer could reach that breaks type safety or memory safety on
   principle, and whether the deny-list refuses it:

   - coercion: a type variable in the result that no argument carries ('a -> 'b,
     int -> 'a): the value returns something of any type, made of nothing of that type;
   - table: an argument is a record the caller can build or change whose fields are
     the data an engine indexes (a string, bytes, an array) or an index into it (a
     mutable int): a table-driven engine over caller-made tables.

   Usage: audit_allowed [EXTRA_MODULE...]   Output, one line each (tab-separated):
     value  M.path.name  coercion|table  denied|reachable  type
     alias  M.Name       Target          denied|allowed|audited
   An alias names another compilation unit (Stdlib.Obj is Stdlib__Obj): it must be
   denied as a module, or be on the allow-list itself (then audited on its own). *)

(* In the standard library's directory, or (OCaml 5: +str, +unix) a directory of its own. *)
let cmi_of m =
  let base = String.uncapitalize_ascii m in
  let dirs = [ Config.standard_library; Filename.concat Config.standard_library base ] in
  let names = [ "stdlib__" ^ m; base ] in
  List.find_map
    (fun (d, n) ->
      let f = Filename.concat d (n ^ ".cmi") in
      if Sys.file_exists f then Some f else None)
    (List.concat_map (fun d -> List.map (fun n -> (d, n)) names) dirs)

let denied e =
  match Proofeval_deny.check_allowed e with
  | () -> false
  | exception Proofeval_deny.Denied _ -> true

let lid parts = Option.get (Longident.unflatten parts)

(* Reachable if either spelling passes: M.Sub.v, or v under `let open M.Sub in`. *)
let value_denied modules name =
  let open Ast_helper in
  let qualified = Exp.ident (Location.mknoloc (lid (modules @ [ name ]))) in
  let opened =
    Exp.open_
      (Opn.mk (Mod.ident (Location.mknoloc (lid modules))))
      (Exp.ident (Location.mknoloc (Longident.Lident name)))
  in
  denied qualified && denied opened

let module_denied modules =
  denied (Ast_helper.Exp.ident (Location.mknoloc (lid (modules @ [ "x" ]))))

let ids_of env ty =
  List.map Audit_types.id (Ctype.free_variables ~env ty)

let rec arrows env ty =
  match Audit_types.desc (Ctype.expand_head env ty) with
  | Types.Tarrow (_, arg, res, _) ->
      let args, res = arrows env res in
      (arg :: args, res)
  | _ -> ([], ty)

let is_coercion env ty =
  let args, res = arrows env ty in
  let carried = List.concat_map (ids_of env) args in
  List.exists (fun v -> not (List.mem v carried)) (ids_of env res)

let is_path p ty env =
  match Audit_types.desc (Ctype.expand_head env ty) with
  | Types.Tconstr (q, _, _) -> Path.same p q
  | _ -> false

let engine_field env (l : Types.label_declaration) =
  List.exists (fun p -> is_path p l.ld_type env)
    [ Predef.path_string; Predef.path_bytes; Predef.path_array ]
  || (l.ld_mutable = Asttypes.Mutable && is_path Predef.path_int l.ld_type env)

let is_table env ty =
  match Audit_types.desc (Ctype.expand_head env ty) with
  | Types.Tconstr (p, _, _) -> (
      match Env.find_type p env with
      | { type_kind = Type_record (labels, _); type_private = Asttypes.Public; _ } ->
          List.exists (engine_field env) labels
      | _ -> false
      | exception Not_found -> false)
  | _ -> false

let takes_table env ty = List.exists (is_table env) (fst (arrows env ty))

let show_type ty = String.concat " " (String.split_on_char '\n' (Audit_types.show_type ty))

let report_value env modules name ty =
  let kinds =
    (if is_coercion env ty then [ "coercion" ] else [])
    @ if takes_table env ty then [ "table" ] else []
  in
  List.iter
    (fun kind ->
      Printf.printf "value\t%s\t%s\t%s\t%s\n"
        (String.concat "." (modules @ [ name ]))
        kind
        (if value_denied modules name then "denied" else "reachable")
        (show_type ty))
    kinds

let allowed m = Proofeval_deny.SS.mem m Proofeval_deny.allowed_library_modules

(* The module an alias's target lies in: Stdlib__Obj is Obj, Stdlib.LargeFile is Stdlib. *)
let unit_of target =
  let head = Ident.name (Path.head target) in
  let prefix = "Stdlib__" in
  let n = String.length prefix in
  if String.length head > n && String.sub head 0 n = prefix then
    String.sub head n (String.length head - n)
  else head

let rec audit env modules sg =
  let env = Env.add_signature sg env in
  List.iter
    (function
      | Types.Sig_value (id, vd, _) -> report_value env modules (Ident.name id) vd.val_type
      | Types.Sig_module (id, _, { md_type = Mty_alias target; _ }, _, _) ->
          let name = Ident.name id in
          let status =
            if module_denied (modules @ [ name ]) then "denied"
            else if List.exists allowed [ name; unit_of target ] then "audited"
            else "allowed"
          in
          Printf.printf "alias\t%s\t%s\t%s\n"
            (String.concat "." (modules @ [ name ]))
            (Path.name target) status
      | Types.Sig_module (id, _, { md_type = Mty_signature sub; _ }, _, _) ->
          audit env (modules @ [ Ident.name id ]) sub
      | _ -> ())
    sg

(* The allowed modules, and those named on the command line (to show what the audit
   finds in modules the deny-list refuses). *)
let () =
  Audit_types.init_load_path Config.standard_library;
  Compmisc.init_path ();
  let env = Compmisc.initial_env () in
  let extra = List.tl (Array.to_list Sys.argv) in
  Proofeval_deny.SS.iter
    (fun m ->
      match cmi_of m with
      | None -> Printf.printf "absent\t%s\n" m
      | Some file -> audit env [ m ] (Cmi_format.read_cmi file).cmi_sign)
    (Proofeval_deny.SS.union Proofeval_deny.allowed_library_modules
       (Proofeval_deny.SS.of_list extra))
