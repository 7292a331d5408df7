(* The deny-list: a walk over the parse tree of an answer that rejects whatever
   reaches outside proving (the process, files, the compiler, unsafe memory, new
   axioms). Part of the trusted core of proofeval's HOL Light checker. *)

exception Denied of string

module SS = Set.Make (String)

(* The library modules a proof may use. Every other module whose interface is on disk
   (the standard library's Sys, Arg, Unix, ...; the compiler's Toploop, Meta, ...;
   camlp5's; whatever lies on the load path) is denied, so a module nobody thought of
   is denied by default. Modules that HOL Light or the context define in OCaml text
   have no interface on disk: they are trusted as that text is.

   An allowed module keeps answers type-safe only if every value it exports does:
   tests/test_hol_audit.py reads these modules' interfaces and fails on any value that
   returns a type no argument carries (a coercion) or runs an engine over tables the
   caller made, unless it is refused here or reviewed there. Lexing and Parsing are
   not allowed for that reason: Parsing.peek_val and yyparse return anything (an
   Obj.magic), and Lexing.engine and new_engine index caller-made tables and buffers
   without bounds checks. *)
let allowed_library_modules =
  SS.of_list
    [ "Stdlib"; "Pervasives"; "List"; "ListLabels"; "Array"; "ArrayLabels"; "String";
      "StringLabels"; "Bytes"; "BytesLabels"; "Char"; "Uchar"; "Buffer"; "Int"; "Int32";
      "Int64"; "Nativeint"; "Float"; "Bool"; "Unit"; "Option"; "Result"; "Either"; "Fun";
      "Seq"; "Set"; "Map"; "MoreLabels"; "StdLabels"; "Hashtbl"; "Stack"; "Queue"; "Lazy";
      "Printf"; "Format"; "Complex"; "Random"; "Str"; "Num";
      "Big_int"; "Ratio"; "Arith_status" ]

(* x.cmi and stdlib__X.cmi name module X. *)
let module_of_cmi f =
  let m = Filename.chop_suffix f ".cmi" in
  let prefix = "stdlib__" in
  let n = String.length prefix in
  let m = if String.length m > n && String.sub m 0 n = prefix then String.sub m n (String.length m - n) else m in
  String.capitalize_ascii m

let rec modules_under depth dir acc =
  match Sys.readdir dir with
  | exception Sys_error _ -> acc
  | files ->
      Array.fold_left
        (fun acc f ->
          let path = Filename.concat dir f in
          if Filename.check_suffix f ".cmi" then SS.add (module_of_cmi f) acc
          else if depth > 0 && (try Sys.is_directory path with Sys_error _ -> false) then
            modules_under (depth - 1) path acc
          else acc)
        acc files

let modules_on_disk =
  lazy
    (List.fold_left
       (fun acc dir -> modules_under 0 dir acc)
       (modules_under 2 Config.standard_library SS.empty)
       (Proofeval_ocaml.load_paths ()))

let denied_values =
  SS.of_list
    [ (* leaving the process or running code at exit *)
      "exit"; "at_exit"; "do_at_exit";
      (* files and channels *)
      "open_in"; "open_in_bin"; "open_in_gen"; "open_out"; "open_out_bin"; "open_out_gen";
      "close_in"; "close_in_noerr"; "close_out"; "close_out_noerr"; "input"; "input_line";
      "input_char"; "input_byte"; "input_binary_int"; "input_value"; "really_input";
      "really_input_string"; "output"; "output_string"; "output_bytes"; "output_char";
      "output_byte"; "output_binary_int"; "output_value"; "output_substring"; "seek_in";
      "seek_out"; "pos_in"; "pos_out"; "in_channel_length"; "out_channel_length";
      "set_binary_mode_in"; "set_binary_mode_out"; "read_line"; "read_int"; "read_int_opt";
      "read_float"; "read_float_opt"; "stdin"; "from_channel"; "formatter_of_out_channel";
      "set_formatter_out_channel";
      (* type-unsafe escapes *)
      "magic"; "repr"; "obj";
      (* HOL Light: new axioms, and loading or running files and commands *)
      "new_axiom"; "mk_thm"; "CHEAT_TAC"; "loadt"; "loads"; "load_on_path";
      "load_through_path"; "needs"; "use_file"; "help"; "string_of_file";
      "strings_of_file"; "file_of_string"; "hol_expand_directory"; "file_on_path" ]

let deny fmt = Printf.ksprintf (fun s -> raise (Denied s)) fmt

let lowercase_prefix p s =
  String.length s >= String.length p
  && String.lowercase_ascii (String.sub s 0 (String.length p)) = p

let check_module m =
  if (SS.mem m (Lazy.force modules_on_disk) && not (SS.mem m allowed_library_modules))
     || lowercase_prefix "stdlib__" m || lowercase_prefix "caml" m
     || lowercase_prefix "proofeval" m
     || m = "Hol"  (* the kernel without its log: theorems that could not replay *)
  then deny "module %s is not allowed in a proof" m

let components lid =
  match Longident.flatten lid with
  | parts -> parts
  | exception _ -> deny "functor application in a path is not allowed"

let check_path lid = List.iter check_module (components lid)

let rec split_last = function
  | [] -> ([], "")
  | [ x ] -> ([], x)
  | x :: rest ->
      let front, last = split_last rest in
      (x :: front, last)

let check_value lid =
  let modules, name = split_last (components lid) in
  List.iter check_module modules;
  if SS.mem name denied_values || lowercase_prefix "unsafe" name
     || lowercase_prefix "proofeval" name || lowercase_prefix "stdlib__" name
  then deny "%s is not allowed in a proof" (String.concat "." (modules @ [ name ]))

(* OCaml before 5 compiles a match that reads a mutable field, runs code (a [when]
   guard, or forcing a [lazy] pattern) and then relies on what it read before: the
   code can change the field, and a later branch reads a value of another type
   (ocaml/ocaml#7241). That forges a [thm] from a ref, so no answer may run code
   while matching. *)
let no_guard case =
  if case.Parsetree.pc_guard <> None then deny "`when` guards are not allowed in a proof"

(* [let rec] of a value that is not a function relies on the compiler's check of
   recursive definitions, which has had soundness bugs; proofs need only functions. *)
let rec is_function e =
  match e.Parsetree.pexp_desc with
  | Parsetree.Pexp_constraint (e, _) -> is_function e
  | _ -> Proofeval_ocaml.is_function e

let check_let_rec bindings =
  if not (List.for_all (fun b -> is_function b.Parsetree.pvb_expr) bindings) then
    deny "`let rec` may only define functions in a proof"

let deny_iterator =
  let open Ast_iterator in
  let open Parsetree in
  let expr self e =
    if Proofeval_ocaml.newtype_parameter e then
      deny "locally abstract types are not allowed in a proof";
    (match e.pexp_desc with
    | Pexp_let (Asttypes.Recursive, bindings, _) -> check_let_rec bindings
    | Pexp_newtype _ -> deny "locally abstract types are not allowed in a proof"
    | Pexp_ident { txt; _ } -> check_value txt
    | Pexp_construct ({ txt; _ }, _) -> check_path txt
    | Pexp_field (_, { txt; _ }) | Pexp_setfield (_, { txt; _ }, _) -> check_path txt
    | Pexp_record (fields, _) -> List.iter (fun ({ Location.txt; _ }, _) -> check_path txt) fields
    | Pexp_open ({ popen_expr = { pmod_desc = Pmod_ident { txt; _ }; _ }; _ }, _) -> check_path txt
    | Pexp_open _ -> deny "only a named module may be opened in a proof"
    | Pexp_letmodule _ -> deny "local modules are not allowed in a proof"
    | Pexp_pack _ -> deny "first-class modules are not allowed in a proof"
    | Pexp_object _ | Pexp_new _ -> deny "objects are not allowed in a proof"
    | Pexp_extension _ -> deny "extension nodes are not allowed in a proof"
    | _ -> ());
    match e.pexp_desc with
    | Pexp_open (_, body) -> self.expr self body
    | _ -> default_iterator.expr self e
  in
  let pat self p =
    (match p.ppat_desc with
    | Ppat_construct ({ txt; _ }, _) | Ppat_type { txt; _ } -> check_path txt
    | Ppat_record (fields, _) -> List.iter (fun ({ Location.txt; _ }, _) -> check_path txt) fields
    | Ppat_lazy _ -> deny "lazy patterns are not allowed in a proof"
    | Ppat_open _ -> deny "opening a module in a pattern is not allowed in a proof"
    | Ppat_unpack _ -> deny "first-class modules are not allowed in a proof"
    | Ppat_extension _ -> deny "extension nodes are not allowed in a proof"
    | _ -> ());
    default_iterator.pat self p
  in
  let typ self t =
    (match t.ptyp_desc with
    | Ptyp_constr ({ txt; _ }, _) | Ptyp_class ({ txt; _ }, _) -> check_path txt
    | Ptyp_package _ -> deny "first-class modules are not allowed in a proof"
    | Ptyp_extension _ -> deny "extension nodes are not allowed in a proof"
    | _ -> ());
    default_iterator.typ self t
  in
  let case self c =
    no_guard c;
    default_iterator.case self c
  in
  let value_binding self vb =
    if Proofeval_ocaml.binding_newtypes vb then
      deny "locally abstract types are not allowed in a proof";
    default_iterator.value_binding self vb
  in
  let module_expr _ _ = deny "modules are not allowed in a proof" in
  let extension _ _ = deny "extension nodes are not allowed in a proof" in
  { default_iterator with expr; pat; typ; case; value_binding; module_expr; extension }

let check_allowed e = deny_iterator.Ast_iterator.expr deny_iterator e
