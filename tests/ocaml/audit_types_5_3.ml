(* What audit_allowed.ml reads of compiler-libs, as OCaml 5.3 (Debian 13) has it: type
   expressions are abstract, the printer resets its own naming state, the load path has
   visible and hidden directories. *)
let id = Types.get_id
let desc = Types.get_desc
let show_type ty = Format.asprintf "%a" Printtyp.type_scheme ty
let init_load_path dir = Load_path.init ~auto_include:Load_path.no_auto_include ~visible:[ dir ] ~hidden:[]
