(* What why3_tool.ml needs from Why3's API that differs between versions: this is Why3 1.8
   (Debian 13), whose locations span lines (Loc.get gives the end line and column too),
   whose drivers load through Driver, and whose prover calls take the configuration and
   [resource_limits] with a time in (float) seconds (since 1.6, but named so since 1.8).
   why3_tool.py compiles it as Why3_compat, beside the tool; its twin why3_compat_1_5.ml
   has the same values for Why3 1.5 (Debian 12). *)

open Why3

(* A location's file, line and column (where it starts). *)
let start loc =
  let file, line, column, _, _ = Loc.get loc in
  (file, line, column)

(* Why3's Coq printer. *)
let coq_driver main env = Driver.load_driver_file_and_extras main env ~extra_dir:None "coq" []

(* A configured prover's driver. *)
let prover_driver main env prover = Driver.load_driver_for_prover main env prover

(* [task] sent to a prover with [seconds] of wall clock and [megabytes] of memory. *)
let prove_task main ~command ~seconds ~megabytes driver task =
  let limits =
    { Call_provers.empty_limits with limit_time = float_of_int seconds; limit_mem = megabytes }
  in
  Driver.prove_task ~command ~config:main ~limits driver task

let interrupt_call main call = Call_provers.interrupt_call ~config:main call
