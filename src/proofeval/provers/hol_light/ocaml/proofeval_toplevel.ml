(* The bytecode engine: answers and contexts go through the HOL Light toplevel that
   runs the checker. An answer is parsed with HOL Light's own (camlp5) parser,
   deny-checked, then type-checked and evaluated by the toplevel in the attempt's
   child. *)

open Proofeval_text
open Proofeval_deny
open Proofeval_phrases

(* ---------------------------------------------------------------------- *)
(* Evaluating an expression of a given HOL type through the toplevel.      *)
(* ---------------------------------------------------------------------- *)

(* The typed value reaches us through [slot]: the phrase assigns a thunk of the
   expected type to it, so the type checker, not us, guarantees its type. *)
let typecheck_into ~slot_name ~type_name e =
  let open Ast_helper in
  let lid s = Location.mknoloc (Longident.Lident s) in
  let body = Exp.constraint_ e (Typ.constr (lid type_name) []) in
  let thunk = Proofeval_ocaml.fun_ (Pat.construct (lid "()") None) body in
  let assign =
    Exp.apply (Exp.ident (lid ":="))
      [ (Asttypes.Nolabel, Exp.ident (lid slot_name));
        (Asttypes.Nolabel, Exp.construct (lid "Some") (Some thunk)) ]
  in
  let buf = Buffer.create 256 in
  let ppf = Format.formatter_of_buffer buf in
  let ok =
    try Toploop.execute_phrase false ppf (Parsetree.Ptop_def [ Str.eval assign ])
    with exn ->
      Location.report_exception ppf exn;
      false
  in
  Format.pp_print_flush ppf ();
  if ok then None else Some (one_line (compiler_reason (Buffer.contents buf)))

type 'a slot = (unit -> 'a) option ref

(* Parse, deny-check and type-check [text]; the thunk, or why not. *)
let compile ?(trusted = false) (slot : 'a slot) ~slot_name ~type_name text =
  match parse_expression text with
  | exception Not_one_expression why -> `Error why
  | e -> (
      match if trusted then () else check_allowed e with
      | exception Denied why -> `Denied why
      | () -> (
          slot := None;
          match typecheck_into ~slot_name ~type_name e with
          | Some why -> `Error ("does not type-check as a " ^ type_name ^ ": " ^ why)
          | None -> (
              match !slot with
              | Some thunk -> `Ok thunk
              | None -> `Error "internal: the typed value did not arrive")))

(* Results print to [ppf]; camlp5 prints parse errors to Format's err_formatter. *)
let load_file path =
  let buf = Buffer.create 4096 in
  let ppf = Format.formatter_of_buffer buf in
  let use () = try Toploop.use_file ppf path with exn -> Location.report_exception ppf exn; false in
  let ok, errors = capture_output ~formatters:[ Format.err_formatter ] use in  (* use never raises *)
  Format.pp_print_flush ppf ();
  let out = Buffer.contents buf ^ errors in
  let tail = if String.length out > 2000 then String.sub out (String.length out - 2000) 2000 else out in
  if ok then [ "ok" ] else [ "error"; one_line ~limit:2000 tail ]

let engine tactic_slot string_slot : ('term, 'tac) Proofeval_server.engine =
  ignore (Lazy.force modules_on_disk);  (* read before any attempt, as the toplevel found them *)
  Proofeval_hints.register ();
  let tactic = compile tactic_slot ~slot_name:"proofeval_tactic_slot" ~type_name:"tactic" in
  {
    Proofeval_server.prepare_tactic =
      (fun ~timeout:_ ~deadline:_ ~memory_mb:_ text -> `Later (fun () -> tactic text));
    trusted_string =
      compile ~trusted:true string_slot ~slot_name:"proofeval_string_slot" ~type_name:"string";
    load = load_file;
    split = split_file;
  }
