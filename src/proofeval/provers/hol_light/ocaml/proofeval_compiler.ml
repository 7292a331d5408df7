(* ocamlopt -shared for one answer, in this process: the native path's compiler kept warm
   (see proofeval_zygote.ml). What an external ocamlopt spends on a small answer is
   mostly reading HOL Light's interface and opening it (a module of thousands of
   values), then its own start: here the interfaces are read and opened once, into an
   environment that every answer is typed in, and each answer is compiled in a fork of
   this process, which keeps that environment and dies afterwards. The passes are
   ocamlopt's own, as `ocamlopt -shared` runs them (with the options in [prepare]). *)

(* What the compiler asks of its back end besides code generation (ocamlopt's driver
   passes the same to the passes; only flambda, which Debian's compiler is not, uses it). *)
module Backend = struct
  let symbol_for_global' = Compilenv.symbol_for_global'
  let closure_symbol = Compilenv.closure_symbol
  let really_import_approx = Import_approx.really_import_approx
  let import_symbol = Import_approx.import_symbol
  let size_int = Arch.size_int
  let big_endian = Arch.big_endian
  let max_sensible_number_of_arguments = Proc.max_arguments_for_tailcalls - 1
end

(* The environment answers are typed in: the modules they open, opened. *)
let environment = ref Env.empty

let open_module name =
  let lid = Location.mknoloc (Longident.Lident name) in
  Ast_helper.(Str.open_ (Opn.mk (Mod.ident lid)))

(* Set the compiler up as `ocamlopt -shared -opaque -w -a -I DIR...` and open [modules]. *)
let prepare ~include_dirs modules =
  Clflags.native_code := true;
  Clflags.shared := true;
  Clflags.dlcode := true;
  Clflags.include_dirs := include_dirs;
  (* The plugin linked by ld itself: gcc -shared, the default, spends some 10 ms starting
     its driver and the linker's LTO plugin, and adds C start-up files that OCaml code
     does not use. The flags are Debian's for shared objects. *)
  Clflags.c_compiler := Some "ld -shared -z relro -z now";
  (* An answer is glue between HOL Light's functions: it need not inline them, and
     without -opaque every answer would read HOL Light's .cmx (some 300 KB) anew. *)
  Clflags.opaque := true;
  ignore (Warnings.parse_options false "-a");
  Compmisc.init_path ();
  let _, env = Proofeval_ocaml.type_structure (Compmisc.initial_env ()) (List.map open_module modules) in
  environment := env

(* [items] compiled as the unit [name] into a plugin in [dir]; what the compiler printed
   about an error it raised. *)
let compile ~dir ~name (items : Parsetree.structure) =
  let prefix = Filename.concat dir (String.uncapitalize_ascii name) in
  let printed = Buffer.create 256 in
  let ppf = Format.formatter_of_buffer printed in
  try
    let info = Proofeval_ocaml.compile_info ~prefix ~name !environment in
    let typed = Compile_common.typecheck_impl info items in
    Compilenv.reset name;
    Optcompile.clambda info (module Backend) typed;
    Asmlink.reset ();
    Asmlink.link_shared ~ppf_dump:ppf [ prefix ^ ".cmx" ] (prefix ^ ".cmxs");
    Ok (prefix ^ ".cmxs")
  with exn ->
    Location.report_exception ppf exn;
    Format.pp_print_flush ppf ();
    Error (Buffer.contents printed)
