(* The native warm checker: HOL Light's core (linked in, and run at start-up), then the
   server with the native engine. The launcher passes where things are in the
   environment. *)
open Proofeval_hol_core

let () =
  let config =
    {
      Proofeval_native.helper = Sys.getenv "PROOFEVAL_PARSE";
      scratch = Sys.getenv "TMPDIR";
    }
  in
  let engine =
    Proofeval_native.engine config ~tactic:Proofeval_native_slots.tactic
      ~interpret:Proofeval_eval.tactic ~string:Proofeval_native_slots.string
  in
  let hol =
    {
      Proofeval_verdict.prove;
      dest_thm;
      axioms;
      aconv;
      record_steps = Proofeval_kernel_log.record_steps;
      end_steps = Proofeval_kernel_log.end_steps;
      prepare_replay = Proofeval_kernel_log.refresh_olds;
      replay = Proofeval_replay.replay_from;
      parse_term;
      encode_term = Proofeval_goals.encode_term;
      decode_term = Proofeval_goals.decode_term;
    }
  in
  Proofeval_states.install
    {
      Proofeval_states.start = Proofeval_goals.start;
      apply = Proofeval_goals.apply;
      count = Proofeval_goals.count;
      show = Proofeval_goals.show;
      encode = Proofeval_goals.encode;
      decode = Proofeval_goals.decode;
      snapshot = Proofeval_goals.snapshot;
      find_theorems = Proofeval_goals.find_theorems;
    }
    hol engine;
  ignore @@ Proofeval_server.serve hol engine
