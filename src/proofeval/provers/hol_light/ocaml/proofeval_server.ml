(* The warm HOL Light checker: runs in a HOL Light process that has loaded a context,
   receives requests from proofeval over a Unix socket, and checks each proof attempt
   in a forked child that dies afterwards.

   This module is the process machinery: forking and confining the attempt's child and
   the replaying sibling, their limits and deadlines, reaping them, reading what they
   send, huge pages, clones. What makes a verdict OK is decided in proofeval_verdict.ml,
   which lists every condition.

   Compiled with plain OCaml (not HOL Light's camlp5 syntax). HOL Light's functions
   reach it as the record [Proofeval_verdict.hol]; how text becomes code reaches it as
   the [engine]: the toplevel's (bytecode, proofeval_toplevel.ml) or compiled and
   dynamically linked (native, proofeval_native.ml). *)

open Proofeval_text
open Proofeval_verdict

(* Text made into a value of the expected type (the type checker, not us, guarantees
   it), refused by the deny-list, or not code of that type. *)
type 'a compiled = [ `Ok of unit -> 'a | `Denied of string | `Error of string ]

(* An answer prepared in the warm process: refused there already (the native path
   parses and compiles it there, within the attempt's time), or a function that the
   attempt's child runs. *)
type 'a prepared = [ `Refused of [ `Denied of string | `Error of string ] | `Later of unit -> 'a compiled ]

type ('term, 'tac) engine = {
  (* [deadline]: the attempt's, on Unix.gettimeofday's clock *)
  prepare_tactic : timeout:float -> deadline:float -> memory_mb:int -> string -> 'tac prepared;
  trusted_string : string -> string compiled;  (* proofeval's own code, never an answer's *)
  load : string -> string list;  (* a context, in this process: "ok" or "error", why *)
  split : string -> string list;  (* a source file's phrases: see Proofeval_phrases *)
}

external setrlimit : int -> int64 -> unit = "proofeval_setrlimit"
external die_with_parent : unit -> unit = "proofeval_die_with_parent"
external forbid_inspection : unit -> unit = "proofeval_forbid_inspection"
external confine_attempt : unit -> unit = "proofeval_confine_attempt"

let rlimit_as = 0 and rlimit_cpu = 1 and rlimit_nproc = 2
and rlimit_fsize = 3 and rlimit_core = 4

(* ---------------------------------------------------------------------- *)
(* The child: one attempt, then death.                                      *)
(* ---------------------------------------------------------------------- *)

type limits = { timeout : float; memory_mb : int }

(* The address space (MiB) this process was bounded to before it loaded a context (see
   [bound_for_loading]), which nothing it starts can exceed: every limit it sets is
   capped there (asking for more would fail). *)
let memory_ceiling = ref max_int

let within_ceiling memory_mb = min memory_mb !memory_ceiling

(* A fresh secret per attempt: a frame without it is not a verdict, even if code
   running in the child found the channel. *)
let fresh_nonce () =
  let fd = Unix.openfile "/dev/urandom" [ Unix.O_RDONLY; Unix.O_CLOEXEC ] 0 in
  let raw = Bytes.create 16 in
  (* unbuffered: a channel would draw 64 KiB of it for these 16 bytes *)
  let rec fill at =
    if at < 16 then
      match Unix.read fd raw at (16 - at) with 0 -> failwith "/dev/urandom ended" | n -> fill (at + n)
  in
  Fun.protect ~finally:(fun () -> Unix.close fd) (fun () -> fill 0);
  String.concat "" (List.init 16 (fun i -> Printf.sprintf "%02x" (Bytes.get_uint8 raw i)))

let isolate_child limits server_fd =
  ignore (Unix.setsid ());
  die_with_parent ();
  Unix.close server_fd;
  let null = Unix.openfile "/dev/null" [ Unix.O_RDWR ] 0 in
  List.iter (fun fd -> Unix.dup2 null fd) [ Unix.stdin; Unix.stdout; Unix.stderr ];
  Unix.close null;
  let mb n = Int64.mul (Int64.of_int n) 1048576L in
  setrlimit rlimit_as (mb (within_ceiling limits.memory_mb));
  setrlimit rlimit_cpu (Int64.of_float (ceil (2. *. limits.timeout) +. 5.));
  setrlimit rlimit_nproc 1L;
  setrlimit rlimit_fsize 0L;
  setrlimit rlimit_core 0L;
  confine_attempt ()

(* With the replay on, every step is written to [steps] (a pipe to the replaying sibling)
   as the kernel makes it (a quick attempt's first steps when it ends OK, see
   proofeval_kernel_log.ml), so the replay runs beside the proof and no process holds the
   derivation; for an OK, the verdict is sent and its channel closed, then the last
   record names the theorem. Each channel is closed as soon as it is written, not at the
   child's exit, which comes only after its memory is torn down. *)
let attempt hol ~replay ~steps prepared before goal ~nonce fd =
  hol.record_steps
    (match steps with
     | Some steps when replay ->
         Some (Unix.out_channel_of_descr steps, fun () -> Unix._exit steps_unwritten)
     | _ -> None);
  let fields =
    match prepared () with
    | (`Error _ | `Denied _) as no -> (refused no, None)
    | `Ok thunk -> judge hol ~replay before goal thunk
  in
  send fd (nonce :: fst fields);
  Unix.close fd;
  match (fields, steps) with (_, Some th), Some _ -> hol.end_steps th | _ -> ()

(* In a clean sibling: rebuild the theorem from the steps, read as they come, through
   the kernel alone. *)
let replay_steps hol goal steps fd =
  send fd (replay_reply hol goal (Unix.in_channel_of_descr steps));
  Unix.close fd

(* ---------------------------------------------------------------------- *)
(* The parent side of an attempt: the wall clock and the verdict channel.   *)
(* ---------------------------------------------------------------------- *)

let now = Unix.gettimeofday

(* One buffer for every read. A new one each time went to the major heap (too big for the
   young one), while a child forked from this process was alive: each such write splits
   the huge page it lies in for good (see [forks_between_collapses]), and so natively most
   of the heap was back in 4 KiB pages within 20 checks, each of them copied by every
   fork and torn down by every exit. *)
let read_chunk = Bytes.create 4096

(* [fd] read into [read_chunk] until its end (`Eof) or [deadline] (`Timeout); [take n]
   is given each read's [n] bytes as they arrive. *)
let read_chunks take deadline fd =
  let rec loop () =
    let remaining = deadline -. now () in
    if remaining <= 0. then `Timeout
    else
      match Unix.select [ fd ] [] [] remaining with
      | [], _, _ -> loop ()
      | _ ->
          let n = Unix.read fd read_chunk 0 (Bytes.length read_chunk) in
          if n = 0 then `Eof else (take n; loop ())
      | exception Unix.Unix_error (Unix.EINTR, _, _) -> loop ()
  in
  loop ()

(* What [fd] sends into [buf] until its end (`Eof, all it sent), [deadline] (`Timeout:
   reading may go on into the same buffer), or more than [limit] bytes. *)
let read_into buf ~limit deadline fd =
  let exception Over in
  let take n =
    if Buffer.length buf + n > limit then raise Over;
    Buffer.add_subbytes buf read_chunk 0 n
  in
  match read_chunks take deadline fd with
  | `Eof -> `Eof (Buffer.contents buf)
  | `Timeout -> `Timeout
  | exception Over -> `Too_big

let read_until_eof_or ~limit deadline fd = read_into (Buffer.create 256) ~limit deadline fd

let rec reap pid =
  try snd (Unix.waitpid [] pid) with Unix.Unix_error (Unix.EINTR, _, _) -> reap pid

(* See proofeval_stubs.c: collapse the 2 MiB stretches of this process's heap of which at
   least [own] pages (of 512) are its alone; the MiB now held in huge pages. A fork then
   copies one page-table entry per 2 MiB, and an exit tears down as few. *)
external huge_pages : int -> int = "proofeval_huge_pages"

(* See proofeval_stubs.c. *)
external pipe_size : Unix.file_descr -> int -> unit = "proofeval_pipe_size"

let all_own = 512 and any_own = 1

(* A warm process's own collections write its heap a page at a time, and a page written
   while it is shared (with the process it was forked from, or with a child) is split off
   its huge page and copied, until forks cost what they cost without huge pages (8 ms for
   the bytecode core, where a small attempt takes 10). So a warm process that keeps
   forking makes its heap its own, in huge pages: every so many forks, each 2 MiB
   stretch it has written to is collapsed (unsharing at most the heap, some 400 MB on the
   core; a process that forks little stays shared). Called after a reply, once its
   children are reaped: a dying child still shares the pages it would collapse. *)
let forks_between_collapses = 32
let forks_since_collapse = ref 0

(* [body] started in a confined child, with the descriptors [closing] closed there: its
   pid and the channel it answers on. *)
let spawn limits ~server_fd ~closing body =
  let rfd, wfd = Unix.pipe ~cloexec:true () in
  incr forks_since_collapse;
  match Unix.fork () with
  | 0 ->
      Unix.close rfd;
      (try
         List.iter Unix.close closing;
         isolate_child limits server_fd;
         body wfd;
         Unix._exit 0
       with _ -> ());
      Unix._exit 3
  | pid ->
      Unix.close wfd;
      (pid, rfd)

(* The child, and its group (which its setsid may not have made yet). Any exception is
   caught: a context that loads unix.cma again gives Unix's C functions a new
   Unix_error, which a handler compiled here does not match. *)
let kill_group pid =
  (try Unix.kill pid Sys.sigkill with _ -> ());
  try Unix.kill (-pid) Sys.sigkill with _ -> ()

let finish (pid, rfd) =
  kill_group pid;
  let status = reap pid in
  Unix.close rfd;
  status

(* Children killed whose reaping waits until the reply is sent: an exit tears down the
   child's copy of the page tables before it can be reaped (2-8 ms for the bytecode
   core), and a verdict that has all it needs does not wait for that, nor does the next
   request, mostly (see [reap_dismissed]). *)
let dismissed : int list ref = ref []

(* Each waited for: before the heap is collapsed (see [collapse_now_and_then]). After
   other requests, only those that have ended are reaped, by [reap_orphans]. Any
   exception is ignored (see [kill_group]). *)
let reap_dismissed () =
  List.iter (fun pid -> try ignore (reap pid) with _ -> ()) !dismissed;
  dismissed := []

(* Children nobody waits for: in the sandbox's first process, the clones (orphaned by
   their double fork) and whatever an attempt's group left behind. Reaped between
   requests (zombies until then), when none of this process's own attempts is running:
   ignoring SIGCHLD instead left it unable to wait for them (ECHILD). Any exception ends
   the loop (a context that loads unix.cma again has its own Unix_error). *)
let rec reap_orphans () =
  match Unix.waitpid [ Unix.WNOHANG ] (-1) with
  | pid, _ when pid > 0 ->
      dismissed := List.filter (( <> ) pid) !dismissed;  (* its pid may be given again *)
      reap_orphans ()
  | _ | (exception _) -> ()

(* See [forks_between_collapses]. *)
let collapse_now_and_then () =
  if !forks_since_collapse >= forks_between_collapses then (
    forks_since_collapse := 0;
    reap_dismissed ();
    ignore (huge_pages any_own))

(* [verdict], given how [child] ended (waited for only if [verdict] asks); the child is
   killed either way. *)
let settle ((pid, rfd) as child) verdict =
  let ended = lazy (finish child) in
  let dismiss () =
    if not (Lazy.is_val ended) then (
      kill_group pid;
      Unix.close rfd;
      dismissed := pid :: !dismissed)
  in
  Fun.protect ~finally:dismiss (fun () -> verdict (fun () -> Lazy.force ended))

(* What [body], run in a confined child, sent by [deadline], and how the child ended. *)
let confined limits ~server_fd ~deadline ~limit body =
  let (_, rfd) as child = spawn limits ~server_fd ~closing:[] body in
  let got = read_until_eof_or ~limit deadline rfd in
  (got, finish child)

(* When the replaying sibling starts beside an attempt's child. Only an OK is replayed:
   a child that has sent anything else before then never has a sibling, so a quick FAIL
   costs what it costs with the replay off; one that sent OK has its sibling started
   then, to replay its steps after it; one still running once it has spent
   [replay_after] seconds of CPU (its own, which a busy machine does not stretch) has
   its sibling replay beside it, so that a long proof's replay takes little more than
   the proof's wall time. Until the sibling starts, the steps wait in their pipe; a
   child that fills it waits, at most until [replay_at_latest] seconds of wall time
   have passed, when the sibling starts whatever the child spent. *)
let replay_after = 0.03 and replay_at_latest = 0.2 and look_every = 0.002

(* Whether [pid] has run [seconds] of CPU (the scheduler's count, in nanoseconds); true
   when it cannot be read, which only starts the sibling sooner. *)
let has_run pid seconds =
  let path = Printf.sprintf "/proc/%d/schedstat" pid in
  match Unix.openfile path [ Unix.O_RDONLY; Unix.O_CLOEXEC ] 0 with
  | exception _ -> true
  | fd -> (
      (* not a channel, whose 64 KiB buffer hastens the major collector (see [read_chunk]) *)
      let n = try Unix.read fd read_chunk 0 (Bytes.length read_chunk) with _ -> 0 in
      Unix.close fd;
      let line = Bytes.sub_string read_chunk 0 n in
      match int_of_string_opt (List.hd (String.split_on_char ' ' line)) with
      | Some ns -> float_of_int ns *. 1e-9 >= seconds
      | None -> true)

(* What the child sent while it ran alone (see [replay_after]), or `Running when its
   sibling should start beside it. *)
let rec alone buf (pid, rfd) ~deadline ~latest =
  let until = Float.min deadline (Float.min latest (now () +. look_every)) in
  match read_into buf ~limit:65536 until rfd with
  | `Timeout when until < deadline && now () < latest && not (has_run pid replay_after) ->
      alone buf (pid, rfd) ~deadline ~latest
  | `Timeout when until < deadline -> `Running
  | (`Eof _ | `Timeout | `Too_big) as got -> got

(* The attempt's child writes its steps, in the order it makes them, through a pipe to
   a clean sibling that replays them as they come; it sends its verdict, then for an OK
   the last record. The sibling is forked from this same clean process, whose state
   forking the child changed in nothing, when [replay_after] says; neither holds the
   other's channel to this process. The pipe holds up to 1 MiB (where the system
   allows): with the default 64 KiB, the child waited for the sibling during 5-7% of a
   heavy proof. *)
let check_replayed hol goal limits ~server_fd ~deadline ~nonce attempt =
  let steps_r, steps_w = Unix.pipe ~cloexec:true () in
  pipe_size steps_w (1 lsl 20);
  let child = spawn limits ~server_fd ~closing:[ steps_r ] (attempt (Some steps_w)) in
  Unix.close steps_w;
  let replayer () =
    spawn limits ~server_fd ~closing:[ snd child ] (replay_steps hol goal steps_r) in
  settle child (fun writer ->
      let buf = Buffer.create 256 in
      let latest = now () +. replay_at_latest in
      let got, replayer =
        Fun.protect ~finally:(fun () -> Unix.close steps_r) (fun () ->
            match alone buf child ~deadline ~latest with
            | `Running ->
                let replayer = replayer () in
                (read_into buf ~limit:65536 deadline (snd child), Some replayer)
            | (`Eof _ | `Timeout | `Too_big) as got ->
                (got, if ok_to_replay ~nonce got then Some (replayer ()) else None))
      in
      match replayer with
      | Some replayer when ok_to_replay ~nonce got ->
          settle replayer (fun replayed ->
              (* The replay is proofeval's cost, not the proof's: a budget of its own. *)
              let deadline = now () +. limits.timeout in
              replay_verdict ~timeout:limits.timeout ~writer ~replayer:replayed
                (read_until_eof_or ~limit:65536 deadline (snd replayer)))
      | replayer ->
          Option.iter (fun r -> settle r ignore) replayer;
          attempt_verdict ~nonce ~replay:true ~timeout:limits.timeout got writer)

(* An attempt's child starts with an empty young heap big enough that a small answer never
   collects there: a collection would promote, and mark and sweep the major heap, writing
   (and so copying) thousands of pages the child shares with this process. This process
   keeps that young heap (set once, which costs a few ms) and empties it before each fork
   (setting it in the child cost about 2 ms a step of proofeval_states.ml). In bytecode
   the toplevel compiles the answer in the child: a quick FAIL that wrote its kernel steps
   collected there, and cost 5.2 ms of CPU more than with the replay off (1.75 ms more with
   this young heap). Natively the child allocates little before the proof, and an 8 MiB
   young heap made a heavy proof's kernel log 13% slower: there only when [natively] says.
   Not on OCaml 5, which reserves address space for the young heap of every possible
   domain (128 of them): 32 MiB each would reserve 4 GiB, over the attempt's
   address-space limit before it starts. *)
let young_heap_for_children ~natively =
  let words = 4 * 1024 * 1024 in
  let roomy = Sys.ocaml_version.[0] < '5' && (natively || Sys.backend_type <> Sys.Native) in
  if roomy && (Gc.get ()).Gc.minor_heap_size < words then
    Gc.set { (Gc.get ()) with Gc.minor_heap_size = words };
  Gc.minor ()

let check hol engine goal limits ~replay answer ~server_fd =
  hol.prepare_replay ();
  let before = hol.axioms () in
  let nonce = fresh_nonce () in
  let start = now () in
  let deadline = start +. limits.timeout in
  let prepared =
    engine.prepare_tactic ~timeout:limits.timeout ~deadline ~memory_mb:limits.memory_mb answer
  in
  young_heap_for_children ~natively:false;
  let verdict =
    match prepared with
    | `Refused no -> refused no
    | `Later prepared when replay ->
        check_replayed hol goal limits ~server_fd ~deadline ~nonce (fun steps ->
            attempt hol ~replay prepared before goal ~nonce ~steps)
    | `Later prepared ->
        let child =
          spawn limits ~server_fd ~closing:[]
            (attempt hol ~replay prepared before goal ~nonce ~steps:None)
        in
        let got = read_until_eof_or ~limit:65536 deadline (snd child) in
        settle child (attempt_verdict ~nonce ~replay ~timeout:limits.timeout got)
  in
  verdict @ [ Printf.sprintf "%.3f" (now () -. start) ]

(* ---------------------------------------------------------------------- *)
(* The server loop.                                                         *)
(* ---------------------------------------------------------------------- *)

type ('term, 'thm, 'tac) server = {
  hol : ('term, 'thm, 'tac) hol;
  engine : ('term, 'tac) engine;
  goals : (string, 'term) Hashtbl.t;
  socket_path : string;
}

let not_a_term = "a statement is the text of one HOL term in backquotes, never code"

(* What rebuilding a child's terms here may spend (CPU seconds): what is left of the
   limit, or a tenth of it if less is left. *)
let rebuild_budget limits deadline = Float.max (deadline -. now ()) (0.1 *. limits.timeout)

(* The parsed statement may be as large as this (in records). *)
let statement_reply_limit = 64 * 1048576

(* The term a statement's text denotes, or why none. The text is one term in backquotes
   (see [quoted_term]), parsed by HOL Light's own parser in a confined child within
   [limits], sent back as records and rebuilt here through the kernel's constructors: a
   statement runs no code here, changes nothing here, and hangs nothing here. *)
let statement hol limits ~server_fd text =
  match quoted_term text with
  | None -> Error not_a_term
  | Some inner -> (
      let body fd =
        send fd
          (match hol.encode_term (hol.parse_term inner) with
          | records -> [ "term"; records ]
          | exception Failure why -> [ "error"; why ]
          | exception Out_of_memory -> [ "error"; "memory exhausted" ]
          | exception Stack_overflow -> [ "error"; "stack overflow" ]
          | exception exn -> [ "error"; Printexc.to_string exn ])
      in
      let deadline = now () +. limits.timeout in
      match confined limits ~server_fd ~deadline ~limit:statement_reply_limit body with
      | `Timeout, _ ->
          Error (Printf.sprintf "the statement was not parsed within %gs" limits.timeout)
      | `Too_big, _ -> Error "the parsed statement is too large"
      | `Eof data, status -> (
          match decode data with
          | [ "term"; records ] -> (
              match hol.decode_term (rebuild_budget limits deadline) records with
              | Ok t -> Ok t
              | Error why -> Error ("the parsed statement costs too much to rebuild: " ^ why)
              | exception (Failure why | Invalid_argument why) ->
                  Error ("the parsed statement does not rebuild: " ^ one_line why))
          | [ "error"; why ] -> Error ("the statement does not parse as a formula: " ^ one_line why)
          | _ | (exception _) -> Error ("the statement's parser: " ^ describe_status status)))

let limits_of timeout memory_mb =
  { timeout = float_of_string timeout; memory_mb = int_of_string memory_mb }

let add_goal srv ~server_fd id text limits =
  match statement srv.hol limits ~server_fd text with
  | Error why -> [ "error"; why ]
  | Ok goal ->
      Hashtbl.replace srv.goals id goal;
      [ "ok" ]

(* Trusted text from proofeval itself (never an answer): an expression of type string. *)
let eval_string srv text =
  match srv.engine.trusted_string text with
  | `Error why | `Denied why -> [ "error"; why ]
  | `Ok thunk -> (
      match thunk () with
      | value -> [ "ok"; value ]
      | exception exn -> [ "error"; Printexc.to_string exn ])

(* Before a context loads here (code, which may be a client's header), when proofeval
   gives a memory limit: this process's address space is bounded by it for good (no attempt of the context
   could run above it anyway), and it leads a process group of its own, so that whatever
   the load starts dies with it when proofeval, at the load's deadline, has the first
   process kill the group (["kill"; pid]). *)
let bound_for_loading memory_mb =
  (try ignore (Unix.setsid ()) with Unix.Unix_error _ -> ());
  memory_ceiling := within_ceiling memory_mb;
  setrlimit rlimit_as (Int64.mul (Int64.of_int !memory_ceiling) 1048576L)

(* ---------------------------------------------------------------------- *)
(* Nothing a context's code starts outlives its load.                       *)
(* ---------------------------------------------------------------------- *)

external child_subreaper : bool -> unit = "proofeval_child_subreaper"

(* Every process the sandbox shows: pid, parent, and whether it still runs (not a
   zombie). Exceptions are caught whatever they are (see [kill_group]).
   "pid (command) state ppid ...": the command may hold anything but the last ')'. *)
let parse_stat pid line =
  let after = String.rindex line ')' + 2 in
  match String.split_on_char ' ' (String.sub line after (String.length line - after)) with
  | state :: ppid :: _ -> Some (pid, int_of_string ppid, state <> "Z" && state <> "X")
  | _ -> None

let read_stat pid =
  match open_in (Printf.sprintf "/proc/%d/stat" pid) with
  | exception _ -> None
  | ic ->
      let line = try Some (input_line ic) with _ -> None in
      close_in_noerr ic;
      (try Option.bind line (parse_stat pid) with _ -> None)

let processes () =
  let names = try Sys.readdir "/proc" with _ -> [||] in
  List.filter_map (fun n -> Option.bind (int_of_string_opt n) read_stat) (Array.to_list names)

let children_of parent = List.filter (fun (_, ppid, _) -> ppid = parent) (processes ())

let sigkill pid = try Unix.kill pid Sys.sigkill with _ -> ()

(* This process's children but [keep], killed and reaped, until none is left: as a
   subreaper, it receives the children of each one that dies, so a session left with
   setsid or a double fork does not escape. *)
let rec end_children ~keep =
  let me = Unix.getpid () in
  match List.filter (fun (pid, _, _) -> not (List.mem pid keep)) (children_of me) with
  | [] -> ()
  | strays ->
      List.iter (fun (pid, _, _) -> sigkill pid) strays;
      List.iter (fun (pid, _, _) -> ignore (try reap pid with _ -> Unix.WEXITED 0)) strays;
      end_children ~keep

(* Load a context here, then end every process its code started (a client's header may
   start one that would write in the scratch every process shares, where answers are
   compiled and the warm parser listens), before this process serves anything. The
   children it had before (the native path's warm parser) stay. *)
let load_alone load path =
  let keep = List.map (fun (pid, _, _) -> pid) (children_of (Unix.getpid ())) in
  child_subreaper true;
  Fun.protect
    ~finally:(fun () ->
      end_children ~keep;
      child_subreaper false)
    (fun () -> load path)

(* The descendants of [root] that still run. *)
let descendants root =
  let all = processes () in
  let rec below parents found =
    match List.filter (fun (_, ppid, _) -> List.mem ppid parents) all with
    | [] -> found
    | next -> below (List.map (fun (pid, _, _) -> pid) next) (next @ found)
  in
  List.filter_map (fun (pid, _, alive) -> if alive then Some pid else None) (below [ root ] [])

(* A process that outlived its deadline (a load: see [load_alone]), with everything it
   started. Stopped first, so that it starts nothing more; as a subreaper it holds the
   orphans of the descendants killed here, until none runs. Bounded: a descendant that
   forks as fast as it is killed cannot hold this process forever. *)
let kill_tree pid =
  (try Unix.kill pid Sys.sigstop with _ -> ());
  let rec sweep rounds =
    match descendants pid with
    | [] -> ()
    | pids ->
        List.iter sigkill pids;
        if rounds > 0 then (
          Unix.sleepf 0.001;
          sweep (rounds - 1))
  in
  sweep 10000;
  kill_group pid

let connect path token =
  let sock = Unix.socket ~cloexec:true Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  Unix.connect sock (Unix.ADDR_UNIX path);
  send sock [ "hello"; token; string_of_int (Unix.getpid ()) ];
  sock

(* Request kinds that other modules serve (proofeval_states.ml): each gives its reply, or
   None when the request is not one of its own. *)
let extensions : (string list -> server_fd:Unix.file_descr -> string list option) list ref =
  ref []

let extension request ~server_fd =
  match List.find_map (fun serve -> serve request ~server_fd) !extensions with
  | Some reply -> reply
  | None -> [ "error"; "bad request" ]

let rec serve_on srv sock =
  Printf.eprintf "proofeval: warm process %d serving\n%!" (Unix.getpid ());
  let ic = Unix.in_channel_of_descr sock in
  let rec loop () =
    match read_fields ic with
    | exception End_of_file ->
        Printf.eprintf "proofeval: warm process %d: connection closed, exiting\n%!" (Unix.getpid ());
        Unix._exit 0
    | request ->
        (try handle srv sock request
         with exn -> send sock [ "error"; "request failed: " ^ one_line (Printexc.to_string exn) ]);
        reap_orphans ();
        collapse_now_and_then ();
        loop ()
  in
  loop ()

and handle srv sock request =
  let reply =
    match request with
    | [ "ping" ] -> [ "ok" ]
    | [ "load"; dir; path; memory_mb ] ->
        if dir <> "" then Sys.chdir dir;
        if memory_mb <> "" then bound_for_loading (int_of_string memory_mb);
        load_alone srv.engine.load path
    | [ "kill"; pid ] ->
        kill_tree (int_of_string pid);
        [ "ok" ]
    | [ "goal"; id; text; timeout; memory_mb ] ->
        add_goal srv ~server_fd:sock id text (limits_of timeout memory_mb)
    | [ "check"; id; timeout; memory_mb; answer; replay ] when List.mem replay [ "on"; "off" ] -> (
        match Hashtbl.find_opt srv.goals id with
        | None -> [ "error"; "unknown goal " ^ id ]
        | Some goal ->
            let limits = limits_of timeout memory_mb in
            let replay = replay = "on" in
            "verdict" :: check srv.hol srv.engine goal limits ~replay answer ~server_fd:sock)
    | [ "clone"; token ] -> clone srv sock token
    | [ "eval"; text ] -> eval_string srv text
    | [ "split"; path ] -> srv.engine.split path
    | _ -> extension request ~server_fd:sock
  in
  send sock reply

(* A copy of this warm process that serves its own connection: double fork so
   that the clone is not our child and needs no reaping. The theorems are numbered
   first, here, once: a clone numbering them itself on its first check (a full
   collection, which writes to every page it shares with us) took 0.9 s in bytecode. *)
and clone srv sock token =
  srv.hol.prepare_replay ();
  match Unix.fork () with
  | 0 -> (
      match Unix.fork () with
      | 0 ->
          Unix.close sock;
          serve_on srv (connect srv.socket_path token)
      | _ -> Unix._exit 0)
  | pid ->
      ignore (reap pid);
      [ "ok" ]

(* The token arrives on stdin, not in the environment, which code running here could
   read; every process forked from this one is closed to inspection from outside. *)
let serve hol engine =
  (* before any fork: every process forked from this one shares these huge pages *)
  Printf.eprintf "proofeval: %d MiB of the heap in huge pages\n%!" (huge_pages all_own);
  let socket_path = Sys.getenv "PROOFEVAL_SOCKET" and token = input_line stdin in
  let null = Unix.openfile "/dev/null" [ Unix.O_RDONLY ] 0 in
  Unix.dup2 null Unix.stdin;
  Unix.close null;
  forbid_inspection ();
  (* The sandbox's first process: orphans end up here (see [reap_orphans]); it waits
     for its own attempts, whatever disposition it inherited. *)
  Sys.set_signal Sys.sigchld Sys.Signal_default;
  let srv = { hol; engine; goals = Hashtbl.create 64; socket_path } in
  serve_on srv (connect socket_path token)
