(* Reading OCaml text with HOL Light's own (camlp5) parser: one answer expression, or
   the top-level phrases of a source file. *)

open Proofeval_text

(* ---------------------------------------------------------------------- *)
(* Parsing: exactly one expression, with HOL Light's own (camlp5) parser.   *)
(* ---------------------------------------------------------------------- *)

exception Not_one_expression of string

let rec strip_trailing_semis s =
  let s = String.trim s in
  let n = String.length s in
  if n >= 2 && String.sub s (n - 2) 2 = ";;" then strip_trailing_semis (String.sub s 0 (n - 2))
  else s

(* HOL Light's pa_j (upstream, since 2024) parses a top-level expression e as
   `let it = e`, as the HOL88 toplevel did: see it as the expression it is. *)
let unwrap_it (items : Parsetree.structure) =
  let open Parsetree in
  match items with
  | [ ({ pstr_desc = Pstr_value (Asttypes.Nonrecursive,
           [ { pvb_pat = { ppat_desc = Ppat_var { txt = "it"; _ }; _ }; pvb_expr; _ } ]); _ }
       as item) ] -> [ { item with pstr_desc = Pstr_eval (pvb_expr, []) } ]
  | _ -> items

let parse_expression text =
  let text = strip_trailing_semis text in
  if text = "" then raise (Not_one_expression "the proof is empty");
  let lexbuf = Lexing.from_string (text ^ "\n;;") in
  let phrase =
    match capture_output (fun () -> !Toploop.parse_toplevel_phrase lexbuf) with
    | phrase, _ -> phrase
    | exception Captured (exn, printed) ->
        let why = if String.trim printed = "" then Printexc.to_string exn else printed in
        let why = strip_location why in
        raise (Not_one_expression ("does not parse: " ^ one_line why))
  in
  let rest =
    Bytes.sub_string lexbuf.Lexing.lex_buffer lexbuf.Lexing.lex_curr_pos
      (lexbuf.Lexing.lex_buffer_len - lexbuf.Lexing.lex_curr_pos)
  in
  if String.trim rest <> "" then
    raise (Not_one_expression "more than one phrase (';;' inside the proof)");
  match phrase with
  | Parsetree.Ptop_dir _ -> raise (Not_one_expression "toplevel directives are not allowed")
  | Parsetree.Ptop_def items -> (
      match unwrap_it items with
      | [ { pstr_desc = Pstr_eval (e, _); _ } ] -> e
      | _ -> raise (Not_one_expression "not a single expression"))

(* ---------------------------------------------------------------------- *)
(* Splitting a source file into top-level phrases, for the builder.         *)
(* ---------------------------------------------------------------------- *)

let span (loc : Location.t) = (loc.loc_start.pos_cnum, loc.loc_end.pos_cnum)

let prove_arguments (e : Parsetree.expression) =
  let open Parsetree in
  let is name (f : expression) =
    match f.pexp_desc with Pexp_ident { txt = Longident.Lident n; _ } -> n = name | _ -> false
  in
  match e.pexp_desc with
  | Pexp_apply (f, [ (Asttypes.Nolabel, { pexp_desc = Pexp_tuple [ g; t ]; _ }) ])
    when is "prove" f -> Some (g, t)
  | Pexp_apply (f, [ (Asttypes.Nolabel, p); (Asttypes.Nolabel, { pexp_desc = Pexp_tuple [ g; t ]; _ }) ])
    when is "time" f && is "prove" p -> Some (g, t)
  | _ -> None

(* kind, name, argument, goal span, tactic span *)
let classify (items : Parsetree.structure) =
  let open Parsetree in
  let none = (-1, -1) in
  match unwrap_it items with
  | [ { pstr_desc = Pstr_value (_, [ { pvb_pat = { ppat_desc = Ppat_var { txt = name; _ }; _ };
                                         pvb_expr; _ } ]); _ } ] -> (
      match prove_arguments pvb_expr with
      | Some (g, t) -> ("prove", name, "", span g.pexp_loc, span t.pexp_loc)
      | None -> ("other", name, "", none, none))
  | [ { pstr_desc = Pstr_eval ({ pexp_desc = Pexp_apply (
          { pexp_desc = Pexp_ident { txt = Longident.Lident f; _ }; _ },
          [ (Asttypes.Nolabel, { pexp_desc = Pexp_constant c; _ }) ]); _ },
        _); _ } ]
    when List.mem f [ "needs"; "loadt"; "loads" ] && Proofeval_ocaml.string_constant c <> None ->
      ("load", f, Option.get (Proofeval_ocaml.string_constant c), none, none)
  | _ -> ("other", "", "", none, none)

(* A phrase ends after the ';;' that follows it (white space between), if any: a file may
   also run phrases on without one, as OCaml's use_file allows. *)
let phrase_stop text stop =
  let n = String.length text in
  let rec skip i = if i < n && String.contains " \t\r\n" text.[i] then skip (i + 1) else i in
  let i = skip stop in
  if i + 1 < n && text.[i] = ';' && text.[i + 1] = ';' then i + 2 else stop

let phrase_fields text phrase =
  let ints (a, b) = if a < 0 then [ "-1"; "-1" ] else [ string_of_int a; string_of_int b ] in
  let fields (start, stop) (kind, name, arg, goal, tactic) =
    [ string_of_int start; string_of_int (phrase_stop text stop); kind; name; arg ]
    @ ints goal @ ints tactic
  in
  match phrase with
  | Parsetree.Ptop_dir { pdir_loc; _ } ->
      fields (span pdir_loc) ("directive", "", "", (-1, -1), (-1, -1))
  | Parsetree.Ptop_def [] -> []
  | Parsetree.Ptop_def (first :: _ as items) ->
      let last = List.nth items (List.length items - 1) in
      fields (fst (span first.pstr_loc), snd (span last.pstr_loc)) (classify items)

(* The whole file at once, as HOL Light loads it (use_file, where phrases need not end in
   ';;'); camlp5 then numbers positions from the file's start. A reply is "ok" and nine
   fields a phrase, or "error", the line (0: unknown) and why. *)
let split_text path text =
  let lexbuf = Lexing.from_string text in
  Location.init lexbuf path;
  match capture_output (fun () -> !Toploop.parse_use_file lexbuf) with
  | phrases, _ -> "ok" :: List.concat_map (phrase_fields text) phrases
  | exception Captured (exn, printed) ->
      let why = if String.trim printed = "" then Printexc.to_string exn else printed in
      let line =
        match exn with
        | Syntaxerr.Error e -> (Syntaxerr.location_of_error e).loc_start.pos_lnum
        | _ -> printed_line printed
      in
      [ "error"; string_of_int line; one_line ~limit:1000 (strip_location why) ]

let split_file path =
  match open_in_bin path with
  | exception Sys_error e -> [ "error"; "0"; e ]
  | ic ->
      let text = really_input_string ic (in_channel_length ic) in
      close_in ic;
      split_text path text
