(* What audit_allowed.ml reads of compiler-libs, as OCaml 4.13 (Debian 12) has it;
   test_hol_audit.py compiles this file as audit_types.ml there, audit_types_5_3.ml on
   OCaml 5.3 (Debian 13). *)
let id t = (Btype.repr t).Types.id
let desc t = t.Types.desc

let show_type ty =
  Printtyp.reset ();
  Format.asprintf "%a" Printtyp.type_scheme ty

let init_load_path dir = Load_path.init [ dir ]
