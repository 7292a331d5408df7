(* The native path's parser and compilers confined, in the process about to be one: the
   same limits whether the warm parser's fork compiles an answer or a tool is started
   for a context's phrases (see proofeval_stubs.c for the system calls). *)

external setrlimit : int -> int64 -> unit = "proofeval_setrlimit"
external confine_compiler : unit -> unit = "proofeval_confine_compiler"

let rlimit_as = 0 and rlimit_cpu = 1 and rlimit_fsize = 3 and rlimit_core = 4
let file_limit_mb = 128  (* any one file a tool writes: an assembly listing, a plugin *)

let mb n = Int64.mul (Int64.of_int n) 1048576L

(* A session of its own (killed whole, with whatever it starts), [memory_mb] of address
   space, [cpu] seconds, [file_limit_mb] per file, no core; [output] as its standard
   output and error, [dir] as its directory; then the compilers' system calls only. *)
let confine ~dir ~cpu ~memory_mb ~output =
  ignore (Unix.setsid ());
  setrlimit rlimit_as (mb memory_mb);
  setrlimit rlimit_cpu (Int64.of_float (Float.max 1. (ceil cpu)));
  setrlimit rlimit_fsize (mb file_limit_mb);
  setrlimit rlimit_core 0L;
  Unix.dup2 output Unix.stdout;
  Unix.dup2 output Unix.stderr;
  Unix.chdir dir;
  confine_compiler ()
