(* The native engine: HOL Light and its contexts are native code, so text cannot be
   evaluated; it is compiled and linked. An answer goes through proofeval_parse (HOL
   Light's own parser and the same deny-list as the bytecode path, writing the checked
   parse tree), then `ocamlopt -shared` (which type-checks it against HOL Light and the
   loaded contexts) into a plugin that the attempt's child links with Dynlink. Both
   programs run here, in the sandbox, under the attempt's limits.

   A context arrives compiled (proofeval compiles contexts once and caches them): the
   warm process links it, which runs it, and later answers open it. *)

open Proofeval_text

type config = {
  helper : string;  (* proofeval_parse *)
  ocamlopt : string;
  include_dirs : string list;  (* the core's and the contexts' interfaces *)
  scratch : string;
}

(* The modules an answer opens, in order: the core, then each context linked here.
   Forks inherit them, as they inherit what the contexts defined. *)
let opened = ref [ "Proofeval_hol_core" ]

let counter = ref 0

(* Files of this process's previous compilation: removed by the next one. *)
let leftovers = ref []

let fresh stem =
  incr counter;
  Printf.sprintf "%s_%d_%d" stem (Unix.getpid ()) !counter

let remove files = List.iter (fun f -> try Sys.remove f with Sys_error _ -> ()) files

let remove_leftovers () =
  remove !leftovers;
  leftovers := []

(* What a compiler printed is cut at [limit]; the parser's reply is whole (a large
   file's phrases run to megabytes). *)
let read_file ?(limit = max_int) path =
  match open_in_bin path with
  | exception Sys_error _ -> ""
  | ic ->
      let n = min (in_channel_length ic) limit in
      let s = really_input_string ic n in
      close_in ic;
      s

(* Run [argv] to completion under CPU, memory and file-size limits; its exit status and
   what it printed. *)
let run_limited ~timeout ~memory_mb ~output argv =
  let out = Unix.openfile output [ Unix.O_WRONLY; Unix.O_CREAT; Unix.O_TRUNC ] 0o600 in
  let pid =
    match Unix.fork () with
    | 0 -> (
        try
          let mb n = Int64.mul (Int64.of_int n) 1048576L in
          Proofeval_server.setrlimit Proofeval_server.rlimit_as (mb memory_mb);
          Proofeval_server.setrlimit Proofeval_server.rlimit_cpu
            (Int64.of_float (ceil timeout +. 1.));
          Proofeval_server.setrlimit Proofeval_server.rlimit_fsize (mb 256);
          Unix.dup2 out Unix.stdout;
          Unix.dup2 out Unix.stderr;
          Unix.execv argv.(0) argv
        with _ -> Unix._exit 127)
    | pid -> pid
  in
  Unix.close out;
  let status = Proofeval_server.reap pid in
  (status, read_file ~limit:65536 output)

(* The sandbox's first process ignores SIGCHLD (the kernel reaps orphaned clones), and
   then could not wait for its own children: for the time of [f], it can. *)
let waiting_for_children f =
  let old = Sys.signal Sys.sigchld Sys.Signal_default in
  Fun.protect f ~finally:(fun () ->
      Sys.set_signal Sys.sigchld old;
      let rec reap_orphans () =
        match Unix.waitpid [ Unix.WNOHANG ] (-1) with
        | pid, _ when pid > 0 -> reap_orphans ()
        | _ | (exception Unix.Unix_error _) -> ()
      in
      if old = Sys.Signal_ignore then reap_orphans ())

let run ~timeout ~memory_mb ~output argv =
  waiting_for_children (fun () -> run_limited ~timeout ~memory_mb ~output argv)

let reply_of path =
  match decode (read_file path) with fields -> fields | exception _ -> [ "error"; "no reply" ]

(* Parse, deny-check, and compile [text] as a value of [kind]: the plugin, or why not. *)
let compile cfg ~timeout ~memory_mb kind text =
  remove_leftovers ();
  let base = Filename.concat cfg.scratch (fresh ("proofeval_" ^ kind)) in
  let source = base ^ ".txt" and ast = base ^ ".ml" and reply = base ^ ".reply" in
  let plugin = base ^ ".cmxs" and log = base ^ ".log" in
  (* the text lies here only while it compiles; the plugin, until the next compilation *)
  let scratch = source :: ast :: reply :: log :: List.map (( ^ ) base) [ ".cmi"; ".cmx"; ".o" ] in
  leftovers := [ plugin ];
  Fun.protect ~finally:(fun () -> remove scratch) @@ fun () ->
  let oc = open_out_bin source in
  output_string oc text;
  close_out oc;
  let helper = Array.of_list ([ cfg.helper; reply; "answer"; kind; source; ast ] @ !opened) in
  match run ~timeout ~memory_mb ~output:log helper with
  | Unix.WEXITED 0, _ -> (
      match reply_of reply with
      | [ "ok" ] -> (
          let includes = List.concat_map (fun d -> [ "-I"; d ]) cfg.include_dirs in
          let argv = [ cfg.ocamlopt; "-shared"; "-w"; "-a" ] @ includes @ [ "-o"; plugin; ast ] in
          match run ~timeout ~memory_mb ~output:log (Array.of_list argv) with
          | Unix.WEXITED 0, _ -> `Plugin plugin
          | _, printed ->
              `Error ("does not type-check as a " ^ kind ^ ": " ^ one_line (compiler_reason printed)))
      | [ "denied"; why ] -> `Denied why
      | [ "error"; why ] -> `Error why
      | _ -> `Error "no valid reply from the parser")
  | _, printed -> `Error ("the parser failed: " ^ one_line printed)

(* Link a plugin here: it sets [slot]; the value it holds. *)
let link plugin (slot : (unit -> 'a) option ref) : 'a Proofeval_server.compiled =
  slot := None;
  match Dynlink.loadfile_private plugin with
  | exception Dynlink.Error e -> `Error ("cannot link the proof: " ^ Dynlink.error_message e)
  | () -> (
      match !slot with Some thunk -> `Ok thunk | None -> `Error "internal: no value arrived")

let in_process cfg kind slot text =
  match compile cfg ~timeout:600. ~memory_mb:16384 kind text with
  | `Plugin plugin -> link plugin slot
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
  let base = Filename.concat cfg.scratch (fresh "proofeval_split") in
  let reply = base ^ ".reply" and log = base ^ ".log" in
  let result =
    match run ~timeout:600. ~memory_mb:16384 ~output:log [| cfg.helper; reply; "split"; path |] with
    | Unix.WEXITED 0, _ -> reply_of reply
    | _, printed -> [ "error"; "0"; "the parser failed: " ^ one_line printed ]
  in
  remove [ reply; log ];
  result

let engine cfg ~tactic ~term ~string : ('term, 'tac) Proofeval_server.engine =
  {
    Proofeval_server.prepare_tactic =
      (fun ~timeout ~memory_mb text ->
        match compile cfg ~timeout ~memory_mb "tactic" text with
        | `Plugin plugin -> fun () -> link plugin tactic
        | (`Denied _ | `Error _) as no -> fun () -> no);
    statement = in_process cfg "term" term;
    trusted_string = in_process cfg "string" string;
    load;
    split = split cfg;
  }
