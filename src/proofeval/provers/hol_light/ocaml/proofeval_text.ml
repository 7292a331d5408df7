(* Plain text helpers shared by the bytecode and the native checker: the framing of
   messages, one-line messages, and the reason in a compiler's message. *)

(* Framing: a message is a count line, then each field as a length line followed by
   that many bytes. *)

let encode fields =
  let b = Buffer.create 256 in
  Buffer.add_string b (string_of_int (List.length fields));
  Buffer.add_char b '\n';
  List.iter
    (fun f ->
      Buffer.add_string b (string_of_int (String.length f));
      Buffer.add_char b '\n';
      Buffer.add_string b f)
    fields;
  Buffer.contents b

let rec write_all fd s off len =
  if len > 0 then
    let n = Unix.write_substring fd s off len in
    write_all fd s (off + n) (len - n)

let send fd fields =
  let s = encode fields in
  write_all fd s 0 (String.length s)

let read_fields ic =
  let n = int_of_string (input_line ic) in
  List.init n (fun _ ->
      let len = int_of_string (input_line ic) in
      really_input_string ic len)

let decode s =
  let ic_pos = ref 0 in
  let line () =
    let i = String.index_from s !ic_pos '\n' in
    let l = String.sub s !ic_pos (i - !ic_pos) in
    ic_pos := i + 1;
    l
  in
  let n = int_of_string (line ()) in
  let fields =
    List.init n (fun _ ->
        let len = int_of_string (line ()) in
        let f = String.sub s !ic_pos len in
        ic_pos := !ic_pos + len;
        f)
  in
  if !ic_pos <> String.length s then failwith "trailing bytes";
  fields

(* Compiler messages carry a location and a source excerpt; the reason follows the
   last "Error: ". *)
let compiler_reason s =
  let marker = "Error: " in
  let m = String.length marker in
  let rec last i found =
    if i + m > String.length s then found
    else last (i + 1) (if String.sub s i m = marker then Some (i + m) else found)
  in
  match last 0 None with Some j -> String.sub s j (String.length s - j) | None -> s

(* Where [key] first occurs in [s]. *)
let find_sub s key =
  let k = String.length key in
  let rec from i =
    if i + k > String.length s then None else if String.sub s i k = key then Some i else from (i + 1)
  in
  from 0

(* 'File "x", line 1, characters 0-2: Parse error: ...' -> 'Parse error: ...' *)
let strip_location s =
  let s = String.trim s in
  let after_colon i =
    match String.index_from_opt s i ':' with
    | Some j -> String.trim (String.sub s (j + 1) (String.length s - j - 1))
    | None -> s
  in
  if String.length s > 5 && String.sub s 0 5 = "File " then
    match find_sub s "characters " with Some i -> after_colon i | None -> s
  else s

let one_line ?(limit = 400) s =
  let s = String.map (fun c -> if c = '\n' || c = '\r' || c = '\t' then ' ' else c) s in
  let s = String.concat " " (List.filter (( <> ) "") (String.split_on_char ' ' s)) in
  if String.length s > limit then String.sub s 0 limit ^ "..." else s

exception Captured of exn * string

(* camlp5 prints its parse errors instead of returning them: catch what it prints. *)
let capture_output ?(formatters = [ Format.std_formatter; Format.err_formatter ]) f =
  let buf = Buffer.create 256 in
  List.iter (fun ppf -> Format.pp_print_flush ppf ()) formatters;  (* earlier output: not ours *)
  let saved = List.map (fun ppf -> Format.pp_get_formatter_out_functions ppf ()) formatters in
  let into_buffer = { (List.hd saved) with
      Format.out_string = Buffer.add_substring buf; out_flush = ignore } in
  List.iter (fun ppf -> Format.pp_set_formatter_out_functions ppf into_buffer) formatters;
  let restore () =
    List.iter2 (fun ppf o -> Format.pp_print_flush ppf (); Format.pp_set_formatter_out_functions ppf o)
      formatters saved
  in
  match f () with
  | v -> restore (); (v, Buffer.contents buf)
  | exception exn -> restore (); raise (Captured (exn, Buffer.contents buf))

(* The line camlp5 names in 'File "x", line N, characters ...' (0 if none). *)
let printed_line s =
  let rec digits i n =
    if i < String.length s && s.[i] >= '0' && s.[i] <= '9' then
      digits (i + 1) ((10 * n) + Char.code s.[i] - 48)
    else n
  in
  let key = ", line " in
  match find_sub s key with Some i -> digits (i + String.length key) 0 | None -> 0


(* A statement's text: one HOL term in backquotes, as benchmark files write it (HOL
   Light's quotation of t is parse_term "t"): the text between them, or None. *)
let quoted_term text =
  let s = String.trim text and quote = '\096' in
  let n = String.length s in
  if n >= 2 && s.[0] = quote && s.[n - 1] = quote then
    let inner = String.sub s 1 (n - 2) in
    if String.contains inner quote then None else Some inner
  else None

(* Text of the answer's own (a Failure's message, an exception it raised) in a message:
   quoted, with its quotes and backslashes escaped, after a fixed prefix, so that it
   never reads as proofeval's word ("OK"). *)
let quoted what =
  let b = Buffer.create (String.length what + 2) in
  Buffer.add_char b '"';
  String.iter
    (fun c -> if c = '"' || c = '\\' then Buffer.add_char b '\\'; Buffer.add_char b c)
    what;
  Buffer.add_char b '"';
  Buffer.contents b

let proof_failed what = "the proof failed: " ^ quoted (one_line what)
let proof_raised exn = "the proof raised " ^ quoted (one_line (Printexc.to_string exn))
