(* Proof states, served by a session's own warm process (a fork of the context).

   The process holds its states as data (see proofeval_goals.ml) in a table of its own;
   no other session's process can name them. Every tactic is an answer: it goes through
   the engine's parser and deny-list, and runs in a confined child under the attempt's
   limits and wall clock, exactly as `check` runs an attempt. Only the new goals come
   back, as terms the kernel rebuilds here; this process never runs a tactic. *)

open Proofeval_text

type ('term, 'tac, 'st) goals = {
  start : 'term -> 'st;
  apply : 'tac -> 'st -> 'st * int;  (* the new state, and how many goals the tactic made *)
  count : 'st -> int;
  show : 'st -> string list;  (* each goal as the prover prints it *)
  encode : 'st -> string;  (* in the child *)
  decode : float -> string -> ('st, string) result;
      (* here, within so many CPU seconds (else Error why); Failure if the text is not
         well-formed goals *)
  snapshot : unit -> unit -> bool;  (* whether the axioms changed since *)
  find_theorems : 'term -> int -> string list;
}

let max_reply_mb = 16
let goal_text_limit = 20000

let cut s =
  if String.length s <= goal_text_limit then s else String.sub s 0 goal_text_limit ^ "\n..."

(* A step's child starts with room in its young heap (see
   [Proofeval_server.young_heap_for_children]) on either path: a step's child applies the
   tactic through the toplevel or evaluates it, and collecting there cost about 2 ms a
   step. *)
let room_for_the_child () = Proofeval_server.young_heap_for_children ~natively:true

let children_cpu () =
  let t = Unix.times () in
  t.Unix.tms_cutime +. t.Unix.tms_cstime

(* Run [body] (which returns its reply's fields) in a confined child; the fields, or a
   final verdict as for an attempt, and the CPU seconds it took. *)
let in_child ?deadline limits ~server_fd body =
  let nonce = Proofeval_server.fresh_nonce () in
  let cpu = children_cpu () in
  let deadline =
    match deadline with
    | Some d -> d
    | None -> Unix.gettimeofday () +. limits.Proofeval_server.timeout
  in
  room_for_the_child ();
  let got, status =
    Proofeval_server.confined limits ~server_fd ~deadline ~limit:(max_reply_mb * 1048576)
      (fun fd -> send fd (nonce :: body ()))
  in
  let spent = Printf.sprintf "%.3f" (children_cpu () -. cpu) in
  let failed v why = `Failed [ v; "check"; one_line why ] in
  let result =
    match (got, status) with
    | `Timeout, _ -> failed "TIMEOUT" (Printf.sprintf "no result within %gs" limits.Proofeval_server.timeout)
    | `Too_big, _ -> failed "ERROR" (Printf.sprintf "the result exceeds %d MiB" max_reply_mb)
    | `Eof data, Unix.WEXITED 0 -> (
        match decode data with
        | n :: "done" :: fields when n = nonce -> `Done fields
        | [ n; v; stage; msg ]
          when n = nonce
               && List.mem v [ "FAIL"; "CHEATING"; "ERROR" ]
               && List.mem stage [ "precheck"; "check" ] -> `Failed [ v; stage; msg ]
        | _ | (exception _) -> failed "ERROR" "no valid result from the child")
    | `Eof _, st -> failed "ERROR" (Proofeval_verdict.describe_status st)
  in
  (result, spent)

(* What the tactic's own code may raise, as a verdict's fields. *)
let guarded f =
  match f () with
  | fields -> fields
  | exception Failure msg -> [ "FAIL"; "check"; one_line (proof_failed msg) ]
  | exception Out_of_memory -> [ "ERROR"; "check"; "memory exhausted" ]
  | exception Stack_overflow -> [ "ERROR"; "check"; "stack overflow" ]
  | exception exn -> [ "ERROR"; "check"; one_line (proof_raised exn) ]

let compiled_or prepared k =
  match prepared () with
  | `Error why -> [ "ERROR"; "precheck"; one_line why ]
  | `Denied why -> [ "CHEATING"; "precheck"; one_line why ]
  | `Ok thunk -> guarded (fun () -> k (thunk ()))

let unhex s =
  String.init (String.length s / 2) (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

(* A term shown alone: print_goal's text of a goal with no hypotheses, its backquotes off. *)
let unquoted s =
  let n = String.length s in
  if n >= 2 && s.[0] = '`' && s.[n - 1] = '`' then String.sub s 1 (n - 2) else s

(* Each goal's fields: its text (print_goal's), its number of hypotheses, each one's label
   and term (in print_goal's order), and its conclusion, each term printed by HOL's
   printer. The state's own records ([encoded], from encode) are read again as one goal
   per term (a "G" record names the goal's label and term records), which show then
   prints one by one. *)
let goal_fields g budget encoded st =
  let records = String.split_on_char '\n' encoded in
  let is_goal r = String.length r > 2 && String.sub r 0 2 = "G " in
  let goals, terms = List.partition is_goal records in
  let rec parts = function
    | [ w ] -> ([], w)
    | l :: h :: rest -> let hyps, w = parts rest in ((l, h) :: hyps, w)
    | [] -> failwith "malformed goal" in
  let shape r = match String.split_on_char ' ' r with
    | "G" :: _ :: rest -> let hyps, w = parts rest in (List.rev hyps, w)
    | _ -> failwith "malformed goal" in
  let shapes = List.map shape goals in
  let alone = List.concat_map (fun (hyps, w) -> List.map snd hyps @ [ w ]) shapes in
  let text = String.concat "\n" (terms @ List.map (fun t -> "G 0 " ^ t) alone) in
  match g.decode budget text with
  | Error why -> failwith ("the goals cost too much to print: " ^ why)
  | Ok single ->
      let printed = ref (List.map (fun s -> cut (unquoted s)) (g.show single)) in
      let next () = match !printed with t :: rest -> printed := rest; t | [] -> failwith "lost a term" in
      List.concat
        (List.map2
           (fun shown (hyps, _) ->
             let hyp_fields = List.concat_map (fun (l, _) -> let t = next () in [ unhex l; t ]) hyps in
             (cut shown :: string_of_int (List.length hyps) :: hyp_fields) @ [ next () ])
           (g.show st) shapes)

let apply_body g budget prepared st () =
  compiled_or prepared (fun tac ->
      let changed = g.snapshot () in
      let st', made = g.apply tac st in
      if changed () then [ "CHEATING"; "check"; "the tactic added axioms" ]
      else
        let encoded = g.encode st' in
        "done" :: string_of_int made :: encoded :: goal_fields g budget encoded st')

let limits_of = Proofeval_server.limits_of

(* The statement is parsed as a term in a confined child, never run (see
   Proofeval_server.statement). *)
let start g hol table ~server_fd id text timeout memory_mb =
  match Proofeval_server.statement hol (limits_of timeout memory_mb) ~server_fd text with
  | Error why -> [ "error"; why ]
  | Ok term ->
      let st = g.start term in
      let budget = (limits_of timeout memory_mb).Proofeval_server.timeout in
      (match goal_fields g budget (g.encode st) st with
       | fields -> Hashtbl.replace table id st; "ok" :: string_of_int (g.count st) :: fields
       | exception (Failure why | Invalid_argument why) -> [ "error"; why ])

let apply g engine table ~server_fd from id timeout memory_mb tactic =
  match Hashtbl.find_opt table from with
  | None -> [ "error"; "no such state" ]
  | Some st -> (
      let limits = limits_of timeout memory_mb in
      (* As for an attempt: the native compile spends the step's own wall clock. *)
      let deadline = Unix.gettimeofday () +. limits.Proofeval_server.timeout in
      let prepared =
        engine.Proofeval_server.prepare_tactic ~timeout:limits.Proofeval_server.timeout
          ~deadline ~memory_mb:limits.Proofeval_server.memory_mb tactic
      in
      let outcome =
        match prepared with
        | `Refused no -> (`Failed (Proofeval_verdict.refused no), "0.000")
        | `Later prepared ->
            let budget = limits.Proofeval_server.timeout in
            in_child ~deadline limits ~server_fd (apply_body g budget prepared st)
      in
      match outcome with
      | `Failed fields, spent -> ("failed" :: fields) @ [ spent ]
      | `Done (made :: encoded :: shown), spent -> (
          match g.decode (Proofeval_server.rebuild_budget limits deadline) encoded with
          | Ok st' ->
              Hashtbl.replace table id st';
              "applied" :: made :: spent :: string_of_int (g.count st') :: shown
          | Error why ->
              [ "failed"; "ERROR"; "check"; one_line ("the new goals cost too much to rebuild: " ^ why);
                spent ]
          | exception (Failure why | Invalid_argument why) ->
              [ "failed"; "CHEATING"; "check"; one_line ("the new goals do not rebuild: " ^ why);
                spent ])
      | `Done _, spent -> [ "failed"; "ERROR"; "check"; "no valid result from the child"; spent ])

(* The pattern is untrusted text too: one term in backquotes, like a statement, parsed
   and searched in a child. *)
let search g hol ~server_fd pattern limit timeout memory_mb =
  let limits = limits_of timeout memory_mb in
  match quoted_term pattern with
  | None -> [ "failed"; "ERROR"; "precheck"; "a pattern is one HOL term in backquotes, never code"; "0" ]
  | Some inner -> (
      let body () =
        match hol.Proofeval_verdict.parse_term inner with
        | exception Failure why ->
            [ "ERROR"; "precheck"; one_line ("the pattern does not parse as a term: " ^ why) ]
        | pattern ->
            guarded (fun () -> "done" :: List.map cut (g.find_theorems pattern (int_of_string limit)))
      in
      match in_child limits ~server_fd body with
      | `Failed fields, spent -> ("failed" :: fields) @ [ spent ]
      | `Done found, spent -> "found" :: spent :: found)

let handle g hol engine table request ~server_fd =
  match request with
  | [ "state_start"; id; text; timeout; memory_mb ] ->
      Some (start g hol table ~server_fd id text timeout memory_mb)
  | [ "state_apply"; from; id; timeout; memory_mb; tactic ] ->
      Some (apply g engine table ~server_fd from id timeout memory_mb tactic)
  | [ "state_release"; id ] ->
      Hashtbl.remove table id;
      Some [ "ok" ]
  | [ "state_count" ] -> Some [ "ok"; string_of_int (Hashtbl.length table) ]
  | [ "state_huge_pages" ] ->
      Some [ "ok"; string_of_int Proofeval_server.(huge_pages all_own) ]
  | [ "state_search"; pattern; limit; timeout; memory_mb ] ->
      Some (search g hol ~server_fd pattern limit timeout memory_mb)
  | _ -> None

(* In the process that boots. *)
let install g hol engine =
  let table = Hashtbl.create 64 in
  Proofeval_server.extensions := handle g hol engine table :: !Proofeval_server.extensions
