(* What differs between OCaml versions in compiler-libs, for OCaml 4.13 to 5.1 (build.py
   compiles this file as proofeval_ocaml.ml there; proofeval_ocaml_5_2.ml from 5.2 on). *)

(* The directories of the load path (Load_path.get_paths, a string list). *)
let load_paths () = Load_path.get_paths ()

(* Whether [e] is a function ([fun] and [function] are two constructors). *)
let is_function (e : Parsetree.expression) =
  match e.pexp_desc with Pexp_fun _ | Pexp_function _ -> true | _ -> false

(* [fun pattern -> body]. *)
let fun_ pattern body = Ast_helper.Exp.fun_ Asttypes.Nolabel None pattern body

(* The text of a string literal. *)
let string_constant (c : Parsetree.constant) =
  match c with Pconst_string (s, _, _) -> Some s | _ -> None

(* Whether [e] is a function with a locally abstract type among its parameters (before 5.2,
   [fun (type a) -> ...] is Pexp_newtype, which the deny-list sees as an expression). *)
let newtype_parameter (_ : Parsetree.expression) = false

(* Whether a [let] binding declares locally abstract types ([let f : type a. ...]): before
   5.2 the parser turns them into Pexp_newtype nodes in the bound expression. *)
let binding_newtypes (_ : Parsetree.value_binding) = false

(* Whether a value's type has no weak type variables. *)
let closed_schema env ty = Ctype.closed_schema env ty

(* What a type expression is (a record field before 4.14). *)
let type_desc (ty : Types.type_expr) = ty.desc

(* The signature and environment a structure types to. *)
let type_structure env items =
  let _, signature, _, env = Typemod.type_structure env items in
  (signature, env)

(* Make [dirs] the load path. *)
let init_load_path dirs = Load_path.init dirs

(* What the compiler's passes need to know of the unit [name] (source and outputs at
   [prefix]) typed in [env]; it becomes the unit being compiled. *)
let compile_info ~prefix ~name env =
  Env.set_unit_name name;
  { Compile_common.source_file = prefix ^ ".ml"; module_name = name; output_prefix = prefix; env;
    ppf_dump = Format.err_formatter; tool_name = "ocamlopt"; native = true }

(* An unbound value's error as Env reports it, its hint from [choices] (see
   proofeval_hints.ml): Env's report in an empty environment has no hint of its own. *)
let unbound_value_error loc error choices =
  Some
    (Location.error_of_printer ~loc
       (fun ppf () -> Env.report_lookup_error loc Env.empty ppf error; Misc.did_you_mean ppf choices)
       ())
