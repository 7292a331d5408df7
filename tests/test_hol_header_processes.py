"""No process a client's header starts outlives the header's load (HOL Light, both paths).

A header is code: it may fork, leave its session (`setsid`) or start a shell job in the
background. Every warm process of a sandbox shares its scratch directory, where the
native path's compiled answers and the warm parser's socket lie, so a process left
running after the load could replace another client's answer or answer in the warm
parser's place: it would choose the verdict of another context's attempt. Each attack
here starts such a process from one context's header, then looks for it from another
context.
"""

from __future__ import annotations

import time
import uuid

import pytest

from proofeval.errors import CheckerError
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.sandbox import SCRATCH
from tests.conftest import on_both_paths, with_context

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

GOAL = "`!n. n + 0 = n`"
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"

# Run [body] in a grandchild that left the loading process's session and group, so that
# neither the load's end nor a kill of its group reaches it.
LINGER = r"""
#load "unix.cma";;
let proofeval_linger body =
  match Unix.fork () with
    0 -> ignore (Unix.setsid ());
         (match Unix.fork () with
            0 -> (try body () with _ -> ()); exit 0
          | _ -> exit 0)
  | pid -> ignore (Unix.waitpid [] pid);;
"""

# While it runs, a lingering process keeps a file of the shared scratch in place.
MARKER_BY_FORK = (
    LINGER
    + r"""
let proofeval_mark () =
  let stop = Unix.gettimeofday () +. 60. in
  while Unix.gettimeofday () < stop do
    (try close_out (open_out "MARK") with Sys_error _ -> ());
    Unix.sleepf 0.05
  done;;
proofeval_linger proofeval_mark;;
"""
)

MARKER_BY_SHELL = r"""
ignore (Sys.command
  "(i=0; while [ $i -lt 1200 ]; do : > MARK; i=$((i+1)); sleep 0.05; done) >/dev/null 2>&1 &");;
"""

# Another context's header fails to load if the file comes back once removed: the
# process is still there, writing where other contexts' answers go.
DETECT = r"""
#load "unix.cma";;
let () =
  (try Sys.remove "MARK" with Sys_error _ -> ());
  Unix.sleepf 1.0;
  if Sys.file_exists "MARK" then
    failwith "LINGERING: a process another header started still writes the scratch";;
"""

# Native path: take over every warm parser's socket (remove it, listen at its path) and
# refuse whatever answer arrives, with a reason of its own.
IMPERSONATE = (
    LINGER
    + r"""
let proofeval_frame fields =
  let b = Buffer.create 64 in
  Buffer.add_string b (string_of_int (List.length fields));
  Buffer.add_char b '\n';
  List.iter (fun f ->
    Buffer.add_string b (string_of_int (String.length f));
    Buffer.add_char b '\n';
    Buffer.add_string b f) fields;
  Buffer.contents b;;
(* HOL Light's lexer does not read Unix's PF_UNIX, SOCK_STREAM or ADDR_UNIX: the same
   values, built by hand (a header may use Obj). *)
let proofeval_unix_address (path : string) : Unix.sockaddr = Obj.magic (ref path);;
let proofeval_listen path =
  let s = Unix.socket (Obj.magic 0 : Unix.socket_domain) (Obj.magic 0 : Unix.socket_type) 0 in
  Unix.bind s (proofeval_unix_address path);
  Unix.listen s 64;
  s;;
let proofeval_impersonate () =
  let stop = Unix.gettimeofday () +. 60. and taken = Hashtbl.create 8 in
  let reply = "1\n" ^ proofeval_frame ["denied"; "FORGED by another context"] in
  while Unix.gettimeofday () < stop do
    Array.iter (fun name ->
      if String.length name > 20 && String.sub name 0 20 = "proofeval_warm_parse"
         && not (Hashtbl.mem taken name) then
        (let path = Filename.concat "SCRATCH" name in
         (try Sys.remove path with Sys_error _ -> ());
         Hashtbl.replace taken name (proofeval_listen path)))
      (Sys.readdir "SCRATCH");
    let socks = Hashtbl.fold (fun _ s acc -> s :: acc) taken [] in
    let ready, _, _ = Unix.select socks [] [] 0.02 in
    List.iter (fun s ->
      let c, _ = Unix.accept s and b = Bytes.create 4096 in
      while Unix.read c b 0 4096 > 0 do () done;  (* the request, to its end *)
      ignore (Unix.write_substring c reply 0 (String.length reply));
      Unix.close c) ready
  done;;
proofeval_linger proofeval_impersonate;;
""".replace("SCRATCH", SCRATCH)
)


def _marked(header: str, mark: str) -> str:
    return header.replace("MARK", f"{SCRATCH}/proofeval_lingering_{mark}")


@pytest.mark.parametrize("header", [MARKER_BY_FORK, MARKER_BY_SHELL], ids=["setsid", "shell"])
def test_no_process_a_header_starts_outlives_its_load(hol_base: WarmProcess, header: str) -> None:
    mark = uuid.uuid4().hex
    first = with_context(hol_base, _marked(header, mark))
    try:
        time.sleep(0.5)  # the lingering process, if any, has written the file by now
        second = with_context(hol_base, _marked(DETECT, mark))  # fails if it still runs
        second.close()
    finally:
        first.close()


def test_a_load_killed_at_its_deadline_takes_what_it_started(hol_base: WarmProcess) -> None:
    mark = uuid.uuid4().hex
    endless = _marked(MARKER_BY_FORK, mark) + "while true do Unix.sleepf 0.1 done;;\n"
    first = hol_base.clone()
    try:
        with pytest.raises(CheckerError):
            first.load(hol_base.launcher.scratch_file("context", endless), "", timeout=5.0)
    finally:
        first.close()
    second = with_context(hol_base, _marked(DETECT, mark))  # fails if it still runs
    second.close()


def test_a_header_cannot_answer_in_the_warm_parsers_place(hol_base: WarmProcess) -> None:
    if hol_base.launcher.native is None:
        pytest.skip("the bytecode path has no warm parser: answers never leave the process")
    attacker = with_context(hol_base, IMPERSONATE)
    victim = with_context(hol_base, "let proofeval_victim = 1;;\n")
    try:
        assert victim.add_goal("g", GOAL) is None
        outcomes = []
        for _ in range(6):  # the first starts the victim's warm parser; the rest use it
            outcomes.append(victim.check("g", PROOF, timeout=60.0, memory_mb=4096))
            time.sleep(0.3)
        forged = [o.message for o in outcomes if "FORGED" in o.message]
        assert not forged, f"another context's process chose the verdict: {forged}"
        assert all(o.verdict == Verdict.OK for o in outcomes), outcomes
    finally:
        victim.close()
        attacker.close()
