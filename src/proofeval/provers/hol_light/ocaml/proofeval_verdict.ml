(* HOL Light's verdict: the decision, apart from the processes that carry it out
   (proofeval_server.ml forks the attempt's child and the replaying sibling, bounds,
   reaps and reads them; this module decides from what they did and sent).

   An attempt is OK only if every one of these holds:
   1. The answer is one OCaml expression, parsed by HOL Light's own parser, that the
      deny-list allows (proofeval_deny.ml) and that the type checker accepts as a
      [tactic] (proofeval_toplevel.ml, or proofeval_native.ml and proofeval_parse.ml:
      what is compiled is the parse tree that was checked). Else CHEATING (denied) or
      ERROR (not one expression, not a tactic), at precheck.
   2. In the attempt's confined child, [prove (goal, tactic)] returns a theorem. A
      Failure is FAIL; any other exception, the memory or the stack exhausted, ERROR.
   3. That theorem has no hypotheses, and its conclusion is [aconv] to the goal: the
      term the statement was parsed as (in a confined child) and rebuilt into through
      the kernel's constructors, in the context's process, before any answer ran. Else
      FAIL.
   4. The axioms after the proof are the context's own: the same list, or one of the
      same length whose theorems are equal one by one. Else CHEATING, whatever 2 and 3
      said.
   5. The child's reply is one frame whose first field is this attempt's nonce (16
      fresh bytes of /dev/urandom, which code in the child cannot predict and no earlier
      child saw), that arrives before the attempt's deadline, and that says OK, stage
      check, with an empty message. Without the nonce a frame is not a verdict; a
      child that ends without one is ERROR; no frame by the deadline is TIMEOUT.
   6. With the replay on (the default), a clean sibling forked from the same context
      rebuilt the theorem from the kernel steps the child wrote, through its own kernel
      (proofeval_kernel_log.ml writes them, proofeval_replay.ml reads them), and the
      rebuilt theorem satisfies 3 again: it says "replayed", within a budget of its own
      (the attempt's limit again). "rejected", or steps that end before their last
      record, is CHEATING; anything else, or silence, TIMEOUT or ERROR.
   With the replay off, OK is the child's word, and its message says so.

   Nothing else decides: no text the answer or HOL Light prints, no exit code, is read
   as a verdict (exit codes only choose the words of an ERROR). *)

open Proofeval_text

(* The kernel's functions the verdict and its processes use, as HOL Light (bytecode,
   boot.ml) or the native core (proofeval_native_main.ml) provides them. *)
type ('term, 'thm, 'tac) hol = {
  prove : 'term * 'tac -> 'thm;
  dest_thm : 'thm -> 'term list * 'term;
  axioms : unit -> 'thm list;
  aconv : 'term -> 'term -> bool;
  record_steps : (out_channel * (unit -> unit)) option -> unit;
      (* from now on, each new theorem's step is written to the channel, in order
         (the function ends the child when they cannot be), or nothing is noted *)
  end_steps : 'thm -> unit;  (* the last record: the theorem proved *)
  prepare_replay : unit -> unit;  (* the serial table, before forking *)
  replay : in_channel -> 'thm;
      (* Failure: the steps do not replay; any other exception: they ended too soon *)
  parse_term : string -> 'term;  (* HOL Light's parser: only ever called in a child *)
  encode_term : 'term -> string;  (* records, in the child (see proofeval_goals.ml) *)
  decode_term : float -> string -> ('term, string) result;
      (* rebuilt through the kernel within so many CPU seconds, or Error why it would cost
         more; Failure if the records do not rebuild *)
}

let verdict_fields verdict stage message = [ verdict; stage; one_line message ]

(* ---- in the attempt's child: conditions 2, 3 and 4 ---- *)

(* Condition 4. *)
let changed_axioms hol before =
  let after = hol.axioms () in
  after != before
  && (List.length after <> List.length before
     || not (List.for_all2 (fun a b -> hol.dest_thm a = hol.dest_thm b) after before))

(* Condition 3: None, or why [th] does not prove [goal]. *)
let proves hol goal th =
  let hyps, concl = hol.dest_thm th in
  if hyps <> [] then Some "the theorem has hypotheses"
  else if not (hol.aconv concl goal) then Some "the theorem is not the goal"
  else None

(* The child's verdict, and for OK the theorem whose steps are replayed (when they are):
   conditions 2, 3 and 4, the last one deciding over the others. *)
let judge hol ~replay before goal thunk =
  let outcome =
    match hol.prove (goal, thunk ()) with
    | th -> (
        match proves hol goal th with
        | Some why -> ([ "FAIL"; "check"; why ], None)
        | None when not replay -> ([ "OK"; "check"; "" ], None)
        | None -> ([ "OK"; "check"; "" ], Some th))
    | exception Failure msg -> (verdict_fields "FAIL" "check" (proof_failed msg), None)
    | exception Out_of_memory -> (verdict_fields "ERROR" "check" "memory exhausted", None)
    | exception Stack_overflow -> (verdict_fields "ERROR" "check" "stack overflow", None)
    | exception exn -> (verdict_fields "ERROR" "check" (proof_raised exn), None)
  in
  if changed_axioms hol before then
    (verdict_fields "CHEATING" "check" "the proof added axioms", None)
  else outcome

(* Condition 1 failed: the answer was refused before it ran. *)
let refused = function
  | `Error why -> verdict_fields "ERROR" "precheck" why
  | `Denied why -> verdict_fields "CHEATING" "precheck" why

(* Exit code of a child that could not write its steps. *)
let steps_unwritten = 4

(* ---- in the replaying sibling: condition 6's reply ---- *)

let replay_reply hol goal steps =
  match hol.replay steps with
  | th -> ( match proves hol goal th with None -> [ "replayed" ] | Some why -> [ "rejected"; why ])
  | exception Failure why -> [ "rejected"; one_line why ]
  | exception Out_of_memory -> [ "error"; "memory exhausted" ]
  | exception Stack_overflow -> [ "error"; "stack overflow" ]
  | exception _ -> [ "incomplete" ]

(* ---- in the context's process: condition 5, and 6 as the sibling answered ---- *)

let describe_status = function
  | Unix.WEXITED n -> Printf.sprintf "the checker exited with code %d" n
  | Unix.WSIGNALED s when s = Sys.sigxcpu -> "the CPU-time limit was reached"
  | Unix.WSIGNALED s when s = Sys.sigkill -> "the checker was killed (memory exhausted?)"
  | Unix.WSIGNALED s -> Printf.sprintf "the checker died of signal %d" s
  | Unix.WSTOPPED s -> Printf.sprintf "the checker stopped on signal %d" s

(* An attempt's verdict when nothing is replayed after it, from what its child sent
   ([got]: `Eof data, `Timeout at the deadline, or `Too_big); [ended]: how the child
   ended, asked only when it sent no verdict. *)
let attempt_verdict ~nonce ~replay ~timeout got ended =
  let sent data =
    match decode data with
    | [ n; "OK"; "check"; "" ] when n = nonce && not replay ->
        Some [ "OK"; "check"; "not replayed through the kernel (replay off)" ]
    | [ n; v; stage; msg ]
      when n = nonce
           && List.mem v [ "FAIL"; "CHEATING"; "ERROR" ]
           && List.mem stage [ "precheck"; "check" ] -> Some [ v; stage; msg ]
    | _ | (exception _) -> None
  in
  match got with
  | `Timeout -> verdict_fields "TIMEOUT" "check" (Printf.sprintf "no verdict within %gs" timeout)
  | `Too_big -> verdict_fields "ERROR" "check" "no valid verdict from the checker"
  | `Eof data -> (
      match sent data with
      | Some v -> v
      | None -> (
          match ended () with
          | Unix.WEXITED 0 -> verdict_fields "ERROR" "check" "no valid verdict from the checker"
          | Unix.WEXITED n when n = steps_unwritten && replay ->
              verdict_fields "ERROR" "check" "cannot write the kernel steps (memory exhausted?)"
          | st -> verdict_fields "ERROR" "check" (describe_status st)))

(* Whether the child said OK (condition 5 with the replay on): then the sibling decides. *)
let ok_to_replay ~nonce = function
  | `Eof data -> ( match decode data with [ n; "OK"; "check"; "" ] -> n = nonce | _ | (exception _) -> false)
  | _ -> false

(* Condition 6, from the sibling's reply; [writer], [replayer]: how the attempt's child,
   which wrote the steps, and the sibling ended, asked only when the reply does not say
   all. *)
let replay_verdict ~timeout ~writer ~replayer = function
  | `Timeout ->
      verdict_fields "TIMEOUT" "check"
        (Printf.sprintf "the kernel steps were not written and replayed within %gs" timeout)
  | `Eof data -> (
      match decode data with
      | [ "replayed" ] -> [ "OK"; "check"; "" ]
      | [ "rejected"; why ] ->
          verdict_fields "CHEATING" "check" ("the theorem does not replay through the kernel: " ^ why)
      | [ "error"; why ] -> verdict_fields "ERROR" "check" ("the replay: " ^ why)
      | [ "incomplete" ] -> (
          match writer () with
          | Unix.WEXITED 0 ->
              verdict_fields "CHEATING" "check" "the kernel steps behind the theorem end before their END"
          | Unix.WEXITED n when n = steps_unwritten ->
              verdict_fields "ERROR" "check" "cannot write the kernel steps (memory exhausted?)"
          | st -> verdict_fields "ERROR" "check" ("while writing the kernel steps: " ^ describe_status st))
      | _ | (exception _) -> (
          match replayer () with
          | Unix.WEXITED 0 -> verdict_fields "ERROR" "check" "no valid reply from the replay"
          | st -> verdict_fields "ERROR" "check" ("the replay: " ^ describe_status st)))
  | `Too_big -> verdict_fields "ERROR" "check" "no valid reply from the replay"
