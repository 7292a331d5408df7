(* ocamlopt -shared for one answer: the native path's compiler kept warm (see
   proofeval_warm_parser.ml). What an external ocamlopt spends on a small answer is mostly
   reading HOL Light's interface and opening it (a module of thousands of values), then
   its own start: here the interfaces are read and opened once, into an environment
   that every answer is typed in, and each answer is compiled in a fork of this
   process, which keeps that environment and dies afterwards. The passes are ocamlopt's
   own, with the options in [prepare]. They are bytecode here, some five times slower
   than ocamlopt.opt's: an answer longer than [in_process_limit] bytes is written out
   as its parse tree and compiled by ocamlopt.opt, with the same options. *)

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

(* Where the two cost the same. In process against ocamlopt.opt (docs/performance.md):
   21 against 33 ms at 130 bytes, 66 against 50 ms at 950 bytes, 151 against 73 ms at
   2.7 KB. *)
let in_process_limit = 512

(* The environment answers are typed in: the modules they open, opened. *)
let environment = ref Env.empty
let opened = ref []

let lid s = Location.mknoloc (Longident.unflatten (String.split_on_char '.' s) |> Option.get)

let opens modules =
  List.map (fun m -> Ast_helper.(Str.open_ (Opn.mk (Mod.ident (lid m))))) modules

(* [items] as a source file ocamlopt reads: OCaml's binary parse-tree format. *)
let write_ast out (items : Parsetree.structure) =
  let oc = open_out_bin out in
  output_string oc Config.ast_impl_magic_number;
  output_value oc (Filename.basename out);
  output_value oc items;
  close_out oc

(* The linker: ld itself, with Debian's flags for shared objects. gcc -shared, the
   default, spends some 10 ms starting its driver and the linker's LTO plugin, and adds
   C start-up files that OCaml code does not use. *)
let linker = "ld -shared -z relro -z now"

(* `ocamlopt -shared -opaque -linscan -w -a -cc LINKER -I DIR...`, then [modules] opened.
   -opaque: an answer is glue between HOL Light's functions and need not inline them;
   without it every answer would read HOL Light's .cmx (some 300 KB) anew. -linscan: a
   long tactic script is one long function, on which graph colouring takes time
   superlinear in its length (a 27 KB script: 2.7 s in ocamlopt.opt, 0.45 s with linear
   scan). *)
let prepare ~include_dirs modules =
  Clflags.native_code := true;
  Clflags.shared := true;
  Clflags.dlcode := true;
  Clflags.opaque := true;
  Clflags.use_linscan := true;
  ignore (Warnings.parse_options false "-a");
  Clflags.c_compiler := Some linker;
  Clflags.include_dirs := include_dirs;
  Compmisc.init_path ();
  let _, env = Proofeval_ocaml.type_structure (Compmisc.initial_env ()) (opens modules) in
  environment := env;
  opened := modules

let options () =
  [ "-shared"; "-opaque"; "-linscan"; "-w"; "-a"; "-cc"; linker ]
  @ List.concat_map (fun d -> [ "-I"; d ]) !Clflags.include_dirs

let read_file path =
  let ic = open_in_bin path in
  Fun.protect ~finally:(fun () -> close_in ic) (fun () -> really_input_string ic (in_channel_length ic))

(* [items] compiled by ocamlopt.opt, [ocamlopt], as [compile_here] does; it prints to
   this process's output, the file [output]. *)
let compile_apart ~ocamlopt ~output ~prefix items =
  write_ast (prefix ^ ".ml") (opens !opened @ items);
  let args = options () @ [ "-o"; prefix ^ ".cmxs"; prefix ^ ".ml" ] in
  match Sys.command (Filename.quote_command ocamlopt args) with
  | 0 -> Ok (prefix ^ ".cmxs")
  | _ -> Error (read_file output)

let compile_here ~prefix ~name items =
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

(* The answer [text], parsed and checked as [items], compiled as the unit [name] into a
   plugin in [dir]; or what the compiler printed about the error. This process's output
   goes to the file [output]. *)
let compile ~ocamlopt ~output ~dir ~name ~text (items : Parsetree.structure) =
  let prefix = Filename.concat dir (String.uncapitalize_ascii name) in
  if String.length text <= in_process_limit then compile_here ~prefix ~name items
  else compile_apart ~ocamlopt ~output ~prefix items
