(* What differs between OCaml versions in compiler-libs, for OCaml 5.2 and later (build.py
   compiles this file as proofeval_ocaml.ml there; proofeval_ocaml_4.ml before 5.2). *)

(* The directories of the load path (Load_path.get_paths is a record of the visible and
   hidden ones since 5.2). *)
let load_paths () = Load_path.get_path_list ()

(* Whether [e] is a function (one constructor, Pexp_function, for [fun] and [function]
   since 5.2). *)
let is_function (e : Parsetree.expression) =
  match e.pexp_desc with Pexp_function _ -> true | _ -> false

(* [fun pattern -> body]. *)
let fun_ pattern body =
  let param = { Parsetree.pparam_loc = Location.none;
                pparam_desc = Pparam_val (Asttypes.Nolabel, None, pattern) } in
  Ast_helper.Exp.function_ [ param ] None (Pfunction_body body)

(* The text of a string literal (a constant carries its location since 5.2). *)
let string_constant (c : Parsetree.constant) =
  match c.pconst_desc with Pconst_string (s, _, _) -> Some s | _ -> None

(* Whether [e] is a function with a locally abstract type among its parameters: since 5.2
   [fun (type a) x -> ...] is one Pexp_function whose parameters include Pparam_newtype,
   with no Pexp_newtype node for the deny-list to see. *)
let newtype_parameter (e : Parsetree.expression) =
  match e.pexp_desc with
  | Pexp_function (params, _, _) ->
      List.exists (fun p -> match p.Parsetree.pparam_desc with Pparam_newtype _ -> true | _ -> false) params
  | _ -> false

(* Whether a [let] binding declares locally abstract types ([let f : type a. ...]): since
   5.2 they are kept in the binding's constraint, not as Pexp_newtype nodes. *)
let binding_newtypes (vb : Parsetree.value_binding) =
  match vb.pvb_constraint with
  | Some (Pvc_constraint { locally_abstract_univars = _ :: _; _ }) -> true
  | _ -> false

(* Whether a value's type has no weak type variables (Ctype.closed_schema was renamed). *)
let closed_schema env ty = Ctype.closed_type_expr ~env ty

(* What a type expression is (abstract since 4.14). *)
let type_desc = Types.get_desc

(* The signature and environment a structure types to (it also returns a shape). *)
let type_structure env items =
  let _, signature, _, _, env = Typemod.type_structure env items in
  (signature, env)

(* Make [dirs] the load path (all visible; no directory of the compiler's added). *)
let init_load_path dirs =
  Load_path.init ~auto_include:Load_path.no_auto_include ~visible:dirs ~hidden:[]

(* What the compiler's passes need to know of the unit [name] (source and outputs at
   [prefix]) typed in [env]; it becomes the unit being compiled. *)
let compile_info ~prefix ~name env =
  let target = Unit_info.make ~source_file:(prefix ^ ".ml") Unit_info.Impl prefix in
  assert (Unit_info.modname target = name);
  Env.set_current_unit target;
  { Compile_common.target; env; ppf_dump = Format.err_formatter; tool_name = "ocamlopt"; native = true }

(* Not from OCaml 5.2 on (see proofeval_hints.ml): errors print through Format_doc from
   5.3, and a copy of Env's report there is yet to be compared with the compiler's on a
   Debian 13 host; Env's own report, hint and all, is kept. *)
let unbound_value_error _loc _error _choices = None
