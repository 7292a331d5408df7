(* The native engine: HOL Light and its contexts are native code, so text cannot be
   evaluated; it is compiled and linked. An answer goes to proofeval_parse, kept warm
   (proofeval_warm_parser.ml), whose fork parses it with HOL Light's own parser, applies the
   same deny-list as the bytecode path, and compiles the checked parse tree with
   ocamlopt's passes (type-checking it against HOL Light and the loaded contexts) into
   a plugin that the attempt's child links with Dynlink; or, for an answer that only
   applies the core's values to each other, sends back its tree, which the child
   evaluates (proofeval_eval.ml) at a fraction of a compilation's cost. That fork runs
   here, in the sandbox, within the attempt's time (wall clock and CPU together) and
   memory, in a scratch directory of its own that is removed however it ends.

   A context arrives compiled (proofeval compiles contexts once and caches them): the
   warm process links it, which runs it, and later answers open it. *)

open Proofeval_text

type config = {
  helper : string;  (* proofeval_parse *)
  scratch : string;
}

(* The modules an answer opens, in order: the core, then each context linked here.
   Forks inherit them, as they inherit what the contexts defined. *)
let opened = ref [ "Proofeval_hol_core" ]

let counter = ref 0

(* The directory of this process's previous compilation (its plugin): removed by the
   next one. *)
let leftovers = ref []

let fresh stem =
  incr counter;
  Printf.sprintf "%s_%d_%d" stem (Unix.getpid ()) !counter

let rec remove_tree path =
  match Sys.is_directory path with
  | true ->
      Array.iter (fun f -> remove_tree (Filename.concat path f)) (try Sys.readdir path with Sys_error _ -> [||]);
      (try Unix.rmdir path with Unix.Unix_error _ -> ())
  | false -> ( try Sys.remove path with Sys_error _ -> ())
  | exception Sys_error _ -> ()

let remove files = List.iter remove_tree files

let remove_leftovers () =
  remove !leftovers;
  leftovers := []

let read_file path =
  match open_in_bin path with
  | exception Sys_error _ -> ""
  | ic ->
      let s = really_input_string ic (in_channel_length ic) in
      close_in ic;
      s

(* What the parser and the compilers may spend: the attempt's time, on the wall clock
   and in CPU seconds, whichever ends first; each tool gets what the ones before it
   left. *)
type budget = { timeout : float; deadline : float; mutable cpu : float; memory_mb : int }

let budget ~timeout ~deadline ~memory_mb =
  let memory_mb = Proofeval_server.within_ceiling memory_mb in
  { timeout; deadline; cpu = deadline -. Unix.gettimeofday (); memory_mb }

let output_limit = 65536

let children_cpu () =
  let t = Unix.times () in
  t.Unix.tms_cutime +. t.Unix.tms_cstime

(* What a tool printed (the first [output_limit] bytes), until it and everything it
   started closed their output, or (what it had printed then) the deadline. *)
let read_output deadline fd =
  let buf = Buffer.create 1024 in
  let take n =
    let room = output_limit - Buffer.length buf in
    Buffer.add_subbytes buf Proofeval_server.read_chunk 0 (min n room)
  in
  match Proofeval_server.read_chunks take deadline fd with
  | `Eof -> `Done (Buffer.contents buf)
  | `Timeout -> `Timeout (Buffer.contents buf)

let rec wait_until deadline pid =
  match Unix.waitpid [ Unix.WNOHANG ] pid with
  | 0, _ when Unix.gettimeofday () < deadline ->
      Unix.sleepf 0.001;
      wait_until deadline pid
  | 0, _ -> None
  | _, status -> Some status
  | exception Unix.Unix_error (Unix.EINTR, _, _) -> wait_until deadline pid

let environment dir =
  Array.append
    (Array.of_list
       (List.filter
          (fun v -> not (String.length v >= 7 && String.sub v 0 7 = "TMPDIR="))
          (Array.to_list (Unix.environment ()))))
    [| "TMPDIR=" ^ dir |]

let start_tool budget dir argv out =
  match Unix.fork () with
  | 0 -> (
      try
        let env = environment dir in
        Proofeval_tool_confinement.confine ~dir ~cpu:budget.cpu ~memory_mb:budget.memory_mb
          ~output:out;
        Unix.execve argv.(0) argv env
      with _ -> Unix._exit 127)
  | pid -> pid

(* Run [argv] in [dir] (also its TMPDIR, where compilers put their temporary files)
   within [budget]: how it ended (None: out of time) and what it printed. *)
let run budget dir argv =
  let rfd, wfd = Unix.pipe ~cloexec:true () in
  let cpu_before = children_cpu () in
  let pid = start_tool budget dir argv wfd in
  Unix.close wfd;
  let output = read_output budget.deadline rfd in
  Unix.close rfd;
  let status =
    match output with `Timeout _ -> None | `Done _ -> wait_until budget.deadline pid
  in
  (try Unix.kill (-pid) Sys.sigkill with Unix.Unix_error _ -> ());
  let status = match status with Some st -> Some st | None -> ignore (Proofeval_server.reap pid); None in
  budget.cpu <- budget.cpu -. (children_cpu () -. cpu_before);
  let printed = match output with `Done s -> s | `Timeout _ -> "" in
  match status with
  | Some (Unix.WSIGNALED s) when s = Sys.sigxcpu -> (None, printed)
  | status -> (status, printed)

let reply_of path =
  match decode (read_file path) with fields -> fields | exception _ -> [ "error"; "no reply" ]

let out_of_time budget =
  `Error
    (Printf.sprintf "the answer could not be parsed and compiled within its %gs" budget.timeout)

(* The warm parser and compiler (see proofeval_warm_parser.ml) that opened [modules]: started
   by this process or by the one it was forked from; one that has died is replaced. *)
type warm_parser = { socket : string; modules : string list }

let warm_parser = ref None

let start_warm_parser cfg =
  let socket = Filename.concat cfg.scratch (fresh "proofeval_warm_parser") in
  let listening = Unix.socket ~cloexec:true Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  Unix.bind listening (Unix.ADDR_UNIX socket);
  Unix.listen listening 64;
  let argv = Array.of_list (cfg.helper :: "serve" :: !opened) in
  (match Unix.fork () with
  | 0 -> (
      try
        Unix.dup2 ~cloexec:false listening Unix.stdin;
        Unix.execve cfg.helper argv (environment cfg.scratch)
      with _ -> Unix._exit 127)
  | _ -> ());
  Unix.close listening;
  let z = { socket; modules = !opened } in
  warm_parser := Some z;
  z

let connect cfg =
  let attempt z =
    let fd = Unix.socket ~cloexec:true Unix.PF_UNIX Unix.SOCK_STREAM 0 in
    match Unix.connect fd (Unix.ADDR_UNIX z.socket) with
    | () -> Some fd
    | exception Unix.Unix_error ((Unix.ECONNREFUSED | Unix.ENOENT), _, _) ->
        Unix.close fd;
        None
  in
  let current = match !warm_parser with Some z when z.modules = !opened -> attempt z | _ -> None in
  match current with Some fd -> fd | None -> Option.get (attempt (start_warm_parser cfg))

(* What the warm parser's fork for one answer wrote: its pid, then its reply. *)
let split_reply s =
  match String.index_opt s '\n' with
  | Some i -> (int_of_string_opt (String.sub s 0 i), String.sub s (i + 1) (String.length s - i - 1))
  | None -> (None, "")

(* One request to the warm parser: the reply of its fork, None if no fork took it (the
   warm parser died), or `Timeout once the fork's session is killed at the deadline. *)
let request cfg budget dir kind ~tree =
  let fd = connect cfg in
  Fun.protect ~finally:(fun () -> Unix.close fd) @@ fun () ->
  let cpu = Printf.sprintf "%.3f" (budget.deadline -. Unix.gettimeofday ()) in
  send fd ([ dir; kind; cpu; string_of_int budget.memory_mb ] @ if tree then [ "tree" ] else []);
  Unix.shutdown fd Unix.SHUTDOWN_SEND;
  match read_output budget.deadline fd with
  | `Done s -> ( match split_reply s with Some _, reply -> `Reply (Some reply) | None, _ -> `Reply None)
  | exception Unix.Unix_error (Unix.ECONNRESET, _, _) -> `Reply None
  | `Timeout so_far ->
      (match split_reply so_far with
      | Some pid, _ ->
          (try Unix.kill (-pid) Sys.sigkill with Unix.Unix_error _ -> ());
          (* its end closes the connection: then nothing more is written in [dir] *)
          ignore (read_output (Unix.gettimeofday () +. 5.) fd)
      | None, _ -> ());
      `Timeout

(* In [dir], which holds answer.txt: parse, deny-check, and compile it as a value of
   [kind] (or, with [tree], give its tree where it has one: proofeval_eval.ml), in a
   fork of the warm parser, killed (with whatever it started) at the deadline. *)
let compile_in cfg budget dir kind ~tree =
  let reply =
    match request cfg budget dir kind ~tree with
    | `Reply None -> request cfg budget dir kind ~tree  (* a new warm parser takes it *)
    | first -> first
  in
  match reply with
  | `Timeout -> out_of_time budget
  | `Reply None -> `Error "the warm parser stopped without taking the answer"
  | `Reply (Some reply) -> (
      match decode reply with
      | [ "ok" ] -> `Plugin (Filename.concat dir "answer.cmxs")
      | "tree" :: fields when tree -> `Tree fields
      | [ "untyped"; printed ] ->
          `Error ("does not type-check as a " ^ kind ^ ": " ^ one_line (compiler_reason printed))
      | [ "denied"; why ] -> `Denied why
      | [ "error"; why ] -> `Error why
      | _ -> `Error "no valid reply from the parser"
      | exception _ -> `Error "the parser and compiler stopped without a reply")

(* Parse, deny-check, and compile [text] as a value of [kind]: the plugin, or why not.
   Everything it writes lies in a directory of its own, removed whatever ended the
   tools; only a plugin stays, until the next compilation. *)
let compile ?(tree = false) cfg budget kind text =
  remove_leftovers ();
  let dir = Filename.concat cfg.scratch (fresh "proofeval_compile") in
  Unix.mkdir dir 0o700;
  let oc = open_out_bin (Filename.concat dir "answer.txt") in
  output_string oc text;
  close_out oc;
  match compile_in cfg budget dir kind ~tree with
  | `Tree fields ->
      remove_tree dir;
      `Tree fields
  | `Plugin plugin ->
      Array.iter
        (fun f -> if f <> Filename.basename plugin then remove_tree (Filename.concat dir f))
        (Sys.readdir dir);
      leftovers := [ dir ];
      `Plugin plugin
  | (`Denied _ | `Error _) as no ->
      remove_tree dir;
      no
  | exception exn ->
      remove_tree dir;
      `Error ("cannot compile: " ^ Printexc.to_string exn)

(* Link a plugin here: it sets [slot]; the value it holds. *)
let link plugin (slot : (unit -> 'a) option ref) : 'a Proofeval_server.compiled =
  slot := None;
  match Dynlink.loadfile_private plugin with
  | exception Dynlink.Error e -> `Error ("cannot link the proof: " ^ Dynlink.error_message e)
  | () -> (
      match !slot with Some thunk -> `Ok thunk | None -> `Error "internal: no value arrived")

let in_process cfg kind slot text =
  let budget = budget ~timeout:600. ~deadline:(Unix.gettimeofday () +. 600.) ~memory_mb:16384 in
  match compile cfg budget kind text with
  | `Plugin plugin -> link plugin slot
  | `Tree _ -> `Error "internal: a tree where a plugin was asked for"
  | (`Denied _ | `Error _) as no -> no

(* A compiled context: linking runs it; its module joins those answers open. *)
let load path =
  let name = String.capitalize_ascii (Filename.chop_extension (Filename.basename path)) in
  match Dynlink.loadfile path with
  | () ->
      opened := !opened @ [ name ];
      [ "ok" ]
  | exception Dynlink.Error (Dynlink.Library's_module_initializers_failed exn) ->
      [ "error"; one_line ~limit:2000 (Printexc.to_string exn) ]
  | exception Dynlink.Error e -> [ "error"; Dynlink.error_message e ]

let split cfg path =
  let dir = Filename.concat cfg.scratch (fresh "proofeval_split") in
  Unix.mkdir dir 0o700;
  let reply = Filename.concat dir "reply" in
  let budget = budget ~timeout:600. ~deadline:(Unix.gettimeofday () +. 600.) ~memory_mb:16384 in
  Fun.protect ~finally:(fun () -> remove_tree dir) @@ fun () ->
  match run budget dir [| cfg.helper; reply; "split"; path |] with
  | Some (Unix.WEXITED 0), _ -> reply_of reply
  | None, _ -> [ "error"; "0"; "the parser ran out of time" ]
  | _, printed -> [ "error"; "0"; "the parser failed: " ^ one_line printed ]

(* An answer that only applies the core's values is evaluated from its tree when
   [interpret] type-checks it (proofeval_eval.ml); any other is compiled. *)
let prepare_tactic cfg ~tactic ~interpret ~timeout ~deadline ~memory_mb text =
  let budget = budget ~timeout ~deadline ~memory_mb in
  let prepared = function
    | `Plugin plugin -> `Later (fun () -> link plugin tactic)
    | `Tree _ -> `Refused (`Error "internal: a tree where a plugin was asked for")
    | (`Denied _ | `Error _) as no -> `Refused no
  in
  match compile ~tree:true cfg budget "tactic" text with
  | `Tree fields -> (
      match interpret fields with
      | Some thunk -> `Later (fun () -> `Ok thunk)
      | None -> prepared (compile cfg budget "tactic" text))
  | other -> prepared other

let engine cfg ~tactic ~interpret ~string : ('term, 'tac) Proofeval_server.engine =
  {
    Proofeval_server.prepare_tactic = prepare_tactic cfg ~tactic ~interpret;
    trusted_string = in_process cfg "string" string;
    load;
    split = split cfg;
  }
