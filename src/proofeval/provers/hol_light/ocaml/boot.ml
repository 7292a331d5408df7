(* Read by the HOL Light toplevel after hol.ml, proofeval_replay.ml and proofeval_goals.ml:
   load the checker and serve.
   PROOFEVAL_BUILD_DIR names the directory holding proofeval_server.cma. *)
#directory "+unix";; (* unix.cma's own directory since OCaml 5 *)
#load "unix.cma";;
Topdirs.dir_directory (Sys.getenv "PROOFEVAL_BUILD_DIR");;
#load "proofeval_server.cma";;
let proofeval_tactic_slot : (unit -> tactic) option ref = ref None;;
let proofeval_string_slot : (unit -> string) option ref = ref None;;
let proofeval_engine =
  Proofeval_toplevel.engine proofeval_tactic_slot proofeval_string_slot;;
let proofeval_hol =
  { Proofeval_verdict.prove = prove; Proofeval_verdict.dest_thm = dest_thm;
    Proofeval_verdict.axioms = axioms; Proofeval_verdict.aconv = aconv;
    Proofeval_verdict.record_steps = Proofeval_kernel_log.record_steps;
    Proofeval_verdict.end_steps = Proofeval_kernel_log.end_steps;
    Proofeval_verdict.prepare_replay = Proofeval_kernel_log.refresh_olds;
    Proofeval_verdict.replay = Proofeval_replay.replay_from;
    Proofeval_verdict.parse_term = parse_term;
    Proofeval_verdict.encode_term = Proofeval_goals.encode_term;
    Proofeval_verdict.decode_term = Proofeval_goals.decode_term };;
Proofeval_states.install
  { Proofeval_states.start = Proofeval_goals.start; Proofeval_states.apply = Proofeval_goals.apply;
    Proofeval_states.count = Proofeval_goals.count; Proofeval_states.show = Proofeval_goals.show;
    Proofeval_states.encode = Proofeval_goals.encode; Proofeval_states.decode = Proofeval_goals.decode;
    Proofeval_states.snapshot = Proofeval_goals.snapshot;
    Proofeval_states.find_theorems = Proofeval_goals.find_theorems }
  proofeval_hol proofeval_engine;;
Proofeval_server.serve proofeval_hol proofeval_engine;;
