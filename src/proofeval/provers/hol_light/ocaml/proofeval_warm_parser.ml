(* The native path's parser and compiler, kept warm (proofeval_parse serve MODULE...).

   Started by a native checker, it reads HOL Light's interfaces and opens [modules] once
   (see proofeval_compiler.ml), then accepts connections on its standard input, a
   listening socket. Each connection is one answer, handled by a fork of this process
   that dies afterwards, so no answer sees what another left: the fork writes its pid
   (a line), reads the request (the framed fields: the answer's directory, which holds
   answer.txt; its kind; the CPU seconds and MiB it may spend; "tree" if its tree may
   do), confines itself as the external tools were (its own session, limits, the
   compiler's system calls), parses, deny-checks and compiles the answer into that
   directory, and writes the framed reply: "ok" (answer.cmxs is there), "tree" and its
   fields (proofeval_tree.ml), "denied" why, "error" why, or "untyped" and what the
   compiler said. The checker kills the fork's session at the attempt's deadline. *)

open Proofeval_text

external die_with_parent : unit -> unit = "proofeval_die_with_parent"
external forbid_inspection : unit -> unit = "proofeval_forbid_inspection"
external huge_pages : int -> int = "proofeval_huge_pages"

let read_to_end fd =
  let buf = Buffer.create 256 and chunk = Bytes.create 4096 in
  let rec loop () =
    match Unix.read fd chunk 0 (Bytes.length chunk) with
    | 0 -> Buffer.contents buf
    | n ->
        Buffer.add_subbytes buf chunk 0 n;
        loop ()
    | exception Unix.Unix_error (Unix.EINTR, _, _) -> loop ()
  in
  loop ()

(* Confined as the tools it is about to be, in [dir], which is also the scratch of the
   compiler (its assembly listings) and of the assembler and linker. *)
let confine ~dir ~cpu ~memory_mb =
  Unix.putenv "TMPDIR" dir;
  Filename.set_temp_dir_name dir;
  (* what the tools print, read back when one fails *)
  let output = Unix.openfile (Filename.concat dir "output") [ Unix.O_WRONLY; Unix.O_CREAT; Unix.O_TRUNC ] 0o600 in
  Proofeval_tool_confinement.confine ~dir ~cpu ~memory_mb ~output;
  Unix.close output

let ocamlopt = lazy (Sys.getenv "PROOFEVAL_OCAMLOPT")

(* The checker reads at most 64 KiB of a reply (proofeval_native.ml's output_limit). *)
let tree_limit = 60_000

(* [tree]: an answer that only applies the core's values is sent back as its tree
   ("tree" and the fields of proofeval_tree.ml), not compiled, if the tree fits. *)
let compiled ~checked ~dir ~name ?(tree = false) kind text =
  match checked kind text with
  | Error reply -> reply
  | Ok (e, items) -> (
      let fields = if tree then Proofeval_tree.of_expression !Proofeval_compiler.environment e else None in
      match Option.map (fun f -> "tree" :: f) fields with
      | Some reply when String.length (encode reply) <= tree_limit -> reply
      | _ -> (
          let output = Filename.concat dir "output" in
          match Proofeval_compiler.compile ~ocamlopt:(Lazy.force ocamlopt) ~output ~dir ~name ~text items with
          | Ok _ -> [ "ok" ]
          | Error printed -> [ "untyped"; printed ]))

let work ~checked conn =
  let pid = string_of_int (Unix.getpid ()) ^ "\n" in
  write_all conn pid 0 (String.length pid);
  let answer ?tree dir kind cpu memory_mb =
    confine ~dir ~cpu:(float_of_string cpu) ~memory_mb:(int_of_string memory_mb);
    compiled ~checked ~dir ~name:"Answer" ?tree kind (Proofeval_compiler.read_file "answer.txt")
  in
  let reply =
    (* out of memory, or of stack on a deeply nested answer *)
    let guarded f = try f () with exn -> [ "error"; one_line (Printexc.to_string exn) ] in
    match decode (read_to_end conn) with
    | [ dir; kind; cpu; memory_mb ] -> guarded (fun () -> answer dir kind cpu memory_mb)
    | [ dir; kind; cpu; memory_mb; "tree" ] ->
        guarded (fun () -> answer ~tree:true dir kind cpu memory_mb)
    | _ -> [ "error"; "no valid request" ]
    | exception exn -> [ "error"; one_line (Printexc.to_string exn) ]
  in
  send conn reply;
  (* now, not at its exit: a process's files are closed only after its memory is torn
     down, and the checker reads the reply to its end *)
  Unix.close conn

(* One answer of trusted text checked and compiled before the first fork, so that what
   the deny-list and the compiler set up on first use (the modules on disk, among
   others) is set up once; then one that does not type-check, so that the compiler's
   map of the environment's short type names, made to print the first type error, is
   made once (interpreted, 36 ms of every ill-typed answer's fork). *)
let warm_up ~checked =
  let name = Printf.sprintf "proofeval_warm_%d" (Unix.getpid ()) in
  let dir = Filename.concat (Filename.get_temp_dir_name ()) name in
  Unix.mkdir dir 0o700;
  (* a name no answer may use: the compiler remembers the units it compiled *)
  (match compiled ~checked ~dir ~name:"Proofeval_warm_up" "tactic" "REWRITE_TAC []" with
  | [ "ok" ] -> ()
  | reply -> prerr_endline ("proofeval_parse: the warm-up failed: " ^ String.concat ": " reply));
  ignore (compiled ~checked ~dir ~name:"Proofeval_warm_up_error" "tactic" "0");  (* untyped *)
  Array.iter (fun f -> Sys.remove (Filename.concat dir f)) (Sys.readdir dir);
  Unix.rmdir dir

(* The forks that have ended, waited for before the next connection (zombies until
   then): a fork nobody waits for (SIGCHLD ignored) has its CPU time counted nowhere, and
   each answer's parse is a share of what a check costs. *)
let rec reap_ended () =
  match Unix.waitpid [ Unix.WNOHANG ] (-1) with
  | pid, _ when pid > 0 -> reap_ended ()
  | _ | (exception Unix.Unix_error _) -> ()

let serve ~checked ~include_dirs modules =
  die_with_parent ();
  forbid_inspection ();
  (* whatever it inherited: the compiler waits for the assembler, this for its forks *)
  Sys.set_signal Sys.sigchld Sys.Signal_default;
  Proofeval_hints.register ();
  Proofeval_compiler.prepare ~include_dirs modules;
  warm_up ~checked;
  (* A fork that collects writes to the pages it shares with this process, which are
     then copied: with a young heap of 8 MiB, a small answer's fork never collects.
     Not from OCaml 5 on, which reserves a young heap's address space for each of 128
     possible domains: 1 GiB, over a small attempt's memory limit. *)
  Gc.compact ();
  if Sys.ocaml_version < "5" then Gc.set { (Gc.get ()) with Gc.minor_heap_size = 1 lsl 20 };
  (* a fork copies one page-table entry per 2 MiB of it (see proofeval_stubs.c); this
     process writes nothing between its forks, so nothing splits them again *)
  ignore (huge_pages 512);
  let rec loop () =
    reap_ended ();
    match Unix.accept ~cloexec:true Unix.stdin with
    | exception Unix.Unix_error (Unix.EINTR, _, _) -> loop ()
    | conn, _ ->
        (match Unix.fork () with
        | 0 ->
            Unix.close Unix.stdin;
            (try work ~checked conn with _ -> ());
            Unix._exit 0
        | _ -> Unix.close conn);
        loop ()
  in
  loop ()
