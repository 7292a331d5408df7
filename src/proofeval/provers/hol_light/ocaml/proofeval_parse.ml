(* The native path's front end, a small bytecode program: HOL Light's own camlp5 parser
   (pa_j) exists only as bytecode, so the native checker runs this program to parse
   text, exactly as the toplevel does, and to apply the same deny-list. What it writes
   is the checked parse tree itself (OCaml's binary AST format, which ocamlopt reads as
   a source file), so what is compiled is what was checked.

     proofeval_parse REPLY answer KIND SOURCE OUT MODULE...   KIND: tactic | term | string
     proofeval_parse REPLY context SOURCE OUT MODULE...
     proofeval_parse REPLY split SOURCE

   The reply is one framed message written to the file REPLY (camlp5 prints banners on
   stdout): "ok", "denied" why, "error" why, or for split the fields of
   Proofeval_phrases.split_file. *)

open Proofeval_text

let read path =
  let ic = open_in_bin path in
  let text = really_input_string ic (in_channel_length ic) in
  close_in ic;
  text

let lid s = Location.mknoloc (Longident.unflatten (String.split_on_char '.' s) |> Option.get)

let opens modules =
  List.map (fun m -> Ast_helper.(Str.open_ (Opn.mk (Mod.ident (lid m))))) modules

let write_ast out (items : Parsetree.structure) =
  let oc = open_out_bin out in
  output_string oc Config.ast_impl_magic_number;
  output_value oc (Filename.basename out);
  output_value oc items;
  close_out oc

(* let () = Proofeval_native_slots.KIND := Some (fun () -> (e : KIND)) *)
let assign_slot kind e =
  let open Ast_helper in
  let body = Exp.constraint_ e (Typ.constr (lid kind) []) in
  let thunk = Exp.fun_ Asttypes.Nolabel None (Pat.construct (lid "()") None) body in
  let slot = Exp.ident (lid ("Proofeval_native_slots." ^ kind)) in
  Str.eval
    (Exp.apply (Exp.ident (lid ":="))
       [ (Asttypes.Nolabel, slot); (Asttypes.Nolabel, Exp.construct (lid "Some") (Some thunk)) ])

let answer kind source out modules =
  if not (List.mem kind [ "tactic"; "term"; "string" ]) then failwith ("unknown kind " ^ kind);
  match Proofeval_phrases.parse_expression (read source) with
  | exception Proofeval_phrases.Not_one_expression why -> [ "error"; why ]
  | e -> (
      (* a string is proofeval's own code; tactics and statements are checked *)
      match if kind = "string" then () else Proofeval_deny.check_allowed e with
      | exception Proofeval_deny.Denied why -> [ "denied"; why ]
      | () ->
          write_ast out (opens modules @ [ assign_slot kind e ]);
          [ "ok" ])

(* The libraries the native checker links in: loading one again is nothing. *)
let linked = [ "unix.cma"; "nums.cma"; "str.cma" ]

(* A context: trusted text, its loads already inlined by proofeval. *)
let context source out modules =
  let lexbuf = Lexing.from_string (read source) in
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
          write_ast out (opens modules @ List.concat_map items phrases);
          [ "ok" ]

let main () =
  (* the jrh lexer reads ALL-CAPS names as values, as in HOL Light's toplevel *)
  ignore (!Toploop.parse_toplevel_phrase (Lexing.from_string "set_jrh_lexer;;"));
  Load_path.init (String.split_on_char ':' (Sys.getenv "PROOFEVAL_LOAD_PATH"));
  match List.tl (List.tl (Array.to_list Sys.argv)) with
  | "answer" :: kind :: source :: out :: modules -> answer kind source out modules
  | "context" :: source :: out :: modules -> context source out modules
  | [ "split"; source ] -> Proofeval_phrases.split_file source
  | _ -> [ "error"; "usage: proofeval_parse REPLY answer|context|split ..." ]

let () =
  let reply =
    match capture_output ~formatters:[ Format.std_formatter ] main with
    | reply, _ -> reply
    | exception Captured (exn, _) -> [ "error"; one_line (Printexc.to_string exn) ]
  in
  let oc = open_out_bin Sys.argv.(1) in
  output_string oc (encode reply);
  close_out oc
