(* The native path's front end, a small bytecode program: HOL Light's own camlp5 parser
   (pa_j) exists only as bytecode, so the native checker runs this program to parse
   text, exactly as the toplevel does, and to apply the same deny-list.

     proofeval_parse serve MODULE...   (see proofeval_warm_parser.ml: answers, kept warm)
     proofeval_parse REPLY context SOURCE OUT MODULE...
     proofeval_parse REPLY split SOURCE

   An answer is parsed, checked and compiled in this program, by ocamlopt's own passes
   (proofeval_compiler.ml; a long one's parse tree by ocamlopt.opt), so what is compiled
   is the parse tree that was checked. A
   context is written as that parse tree (OCaml's binary AST format, which ocamlopt
   reads as a source file). The reply is one framed message written to the file REPLY
   (camlp5 prints banners on stdout): "ok", "error" why, or for split the fields of
   Proofeval_phrases.split_file. *)

open Proofeval_text

let lid = Proofeval_compiler.lid

(* let () = Proofeval_native_slots.KIND := Some (fun () -> (e : KIND)) *)
let assign_slot kind e =
  let open Ast_helper in
  let body = Exp.constraint_ e (Typ.constr (lid kind) []) in
  let thunk = Proofeval_ocaml.fun_ (Pat.construct (lid "()") None) body in
  let slot = Exp.ident (lid ("Proofeval_native_slots." ^ kind)) in
  Str.eval
    (Exp.apply (Exp.ident (lid ":="))
       [ (Asttypes.Nolabel, slot); (Asttypes.Nolabel, Exp.construct (lid "Some") (Some thunk)) ])

(* The answer [text] as an expression, and as the structure that hands it, a value of
   [kind], to the checker; or the reply that says why not. *)
let checked kind text =
  if not (List.mem kind [ "tactic"; "string" ]) then failwith ("unknown kind " ^ kind);
  match Proofeval_phrases.parse_expression text with
  | exception Proofeval_phrases.Not_one_expression why -> Error [ "error"; why ]
  | e -> (
      (* a string is proofeval's own code; tactics and statements are checked *)
      match if kind = "string" then () else Proofeval_deny.check_allowed e with
      | exception Proofeval_deny.Denied why -> Error [ "denied"; why ]
      | () -> Ok (e, [ assign_slot kind e ]))

(* The toplevel lets a value keep a type that is not yet known ('_weak) until a later
   phrase fixes it; a compiled module may not, so a context with one would not compile.
   Such a value that is a function (a partial application: a printer, a conversion
   made from a list of theorems) is eta-expanded, which gives it a polymorphic type
   without changing what it computes; others are left for the compiler to report. *)
let weak_functions env signature =
  List.filter_map
    (function
      | Types.Sig_value (id, desc, _) when not (Proofeval_ocaml.closed_schema env desc.val_type) -> (
          match Proofeval_ocaml.type_desc (Ctype.expand_head env desc.val_type) with
          | Types.Tarrow _ -> Some (Ident.name id)
          | _ -> None)
      | _ -> None)
    signature

let last_index p items =
  snd (List.fold_left (fun (i, found) item -> (i + 1, if p item then i else found)) (0, -1) items)

let binds_value name = function
  | { Parsetree.pstr_desc = Pstr_value (_, vbs); _ } ->
      List.exists
        (fun vb -> match vb.Parsetree.pvb_pat.ppat_desc with Ppat_var v -> v.txt = name | _ -> false)
        vbs
  | _ -> false

(* [let name = e] as [let name = fun x -> e x]. *)
let expand name (item : Parsetree.structure_item) =
  let open Ast_helper in
  let vb_expand (vb : Parsetree.value_binding) =
    match vb.pvb_pat.ppat_desc with
    | Ppat_var v when v.txt = name ->
        let x = "proofeval_eta" in
        let body = Exp.apply vb.pvb_expr [ (Asttypes.Nolabel, Exp.ident (lid x)) ] in
        { vb with pvb_expr = Proofeval_ocaml.fun_ (Pat.var (Location.mknoloc x)) body }
    | _ -> vb
  in
  match item.pstr_desc with
  | Pstr_value (flag, vbs) -> { item with pstr_desc = Pstr_value (flag, List.map vb_expand vbs) }
  | _ -> item

(* Only what a module exports must have a closed type: the last binding of each name,
   in this structure and in the structures of the modules it exports. *)
let rec close_weak env signature items =
  let items =
    List.fold_left
      (fun items name ->
        let last = last_index (binds_value name) items in
        List.mapi (fun i item -> if i = last then expand name item else item) items)
      items (weak_functions env signature)
  in
  List.fold_left
    (fun items -> function
      | Types.Sig_module (id, _, { md_type = Mty_signature sub; _ }, _, _) -> (
          let name = Ident.name id in
          let defines = function
            | { Parsetree.pstr_desc = Pstr_module { pmb_name = { txt = Some n; _ };
                  pmb_expr = { pmod_desc = Pmod_structure _; _ }; _ }; _ } -> n = name
            | _ -> false
          in
          let last = last_index defines items in
          List.mapi
            (fun i (item : Parsetree.structure_item) ->
              match item.pstr_desc with
              | Pstr_module ({ pmb_expr = { pmod_desc = Pmod_structure inner; _ } as m; _ } as mb)
                when i = last ->
                  let inner = close_weak env sub inner in
                  { item with pstr_desc =
                      Pstr_module { mb with pmb_expr = { m with pmod_desc = Pmod_structure inner } } }
              | _ -> item)
            items)
      | _ -> items)
    items signature

(* The toplevel lets a value keep a type that is not yet known ('_weak) until a later
   phrase fixes it; a compiled module may not, so a context with one would not compile.
   Such a value that is a function (a partial application: a printer, a conversion
   made from a list of theorems) is eta-expanded, which gives it a polymorphic type
   without changing what it computes; others are left for the compiler to report. *)
let generalize items =
  match
    Clflags.include_dirs := Proofeval_ocaml.load_paths ();
    Compmisc.init_path ();
    Proofeval_ocaml.type_structure (Compmisc.initial_env ()) items
  with
  | exception _ -> items  (* the compiler will say what is wrong *)
  | signature, env -> close_weak env signature items

(* The libraries the native checker links in: loading one again is nothing. *)
let linked = [ "unix.cma"; "nums.cma"; "str.cma" ]

(* A context: trusted text, its loads already inlined by proofeval. *)
let context source out modules =
  let lexbuf = Lexing.from_string (Proofeval_compiler.read_file source) in
  Location.init lexbuf source;
  match capture_output (fun () -> !Toploop.parse_use_file lexbuf) with
  | exception Captured (exn, printed) ->
      let why = if String.trim printed = "" then Printexc.to_string exn else printed in
      [ "error"; one_line ~limit:1000 (strip_location why) ]
  | phrases, _ ->
      let directive = function
        | Parsetree.Ptop_dir { pdir_name = { txt = "load"; _ };
                               pdir_arg = Some { pdira_desc = Pdir_string lib; _ }; _ }
          when List.mem lib linked -> None
        | Parsetree.Ptop_dir d -> Some d.pdir_name.txt
        | Parsetree.Ptop_def _ -> None
      in
      match List.find_map directive phrases with
      | Some name -> [ "error"; Printf.sprintf "the directive #%s cannot be compiled natively" name ]
      | None ->
          let items = function Parsetree.Ptop_def items -> items | Parsetree.Ptop_dir _ -> [] in
          let items = Proofeval_compiler.opens modules @ List.concat_map items phrases in
          Proofeval_compiler.write_ast out (generalize items);
          [ "ok" ]

let load_path () = String.split_on_char ':' (Sys.getenv "PROOFEVAL_LOAD_PATH")

let setup () =
  (* the jrh lexer reads ALL-CAPS names as values, as in HOL Light's toplevel *)
  ignore (!Toploop.parse_toplevel_phrase (Lexing.from_string "set_jrh_lexer;;"));
  Proofeval_ocaml.init_load_path (load_path ())

let main () =
  setup ();
  match List.tl (List.tl (Array.to_list Sys.argv)) with
  | "context" :: source :: out :: modules -> context source out modules
  | [ "split"; source ] -> Proofeval_phrases.split_file source
  | _ -> [ "error"; "usage: proofeval_parse serve|REPLY context|REPLY split ..." ]

let reply () =
  let reply =
    match capture_output ~formatters:[ Format.std_formatter ] main with
    | reply, _ -> reply
    | exception Captured (exn, _) -> [ "error"; one_line (Printexc.to_string exn) ]
  in
  let oc = open_out_bin Sys.argv.(1) in
  output_string oc (encode reply);
  close_out oc

let () =
  match Array.to_list Sys.argv with
  | _ :: "serve" :: modules ->
      setup ();
      Proofeval_warm_parser.serve ~checked ~include_dirs:(load_path ()) modules
  | _ -> reply ()
