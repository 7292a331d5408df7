"""An attempt sees nothing and touches nothing but itself: files, secrets, other attempts.

Each class is attacked twice where both layers apply: from an answer (the deny-list must
refuse it) and from code a context defines (the deny-list never sees a context, so only
the sandbox and the process confinement stand between it and the target).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.model import Outcome, Stage, Verdict
from proofeval.provers.hol_light.build import uses_findlib
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from proofeval.provers.sandbox import SCRATCH, SCRATCH_BYTES
from tests.conftest import on_both_paths, with_context

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

GOAL = "`!n. n + 0 = n`"
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"

# Code from elsewhere: a benchmark's setup may define anything, with every module.
HOSTILE_CONTEXT = r"""
#load "unix.cma";;
let slurp path =
  try
    let ic = open_in_bin path in
    let s = really_input_string ic (min 4000 (in_channel_length ic)) in
    close_in ic; s
  with Sys_error e -> e;;
let read_proc path =  (* a /proc file, whose length reads as 0 *)
  let ic = open_in_bin path in
  let b = Buffer.create 4096 in
  (try while true do Buffer.add_channel b ic 1 done with End_of_file -> ());
  close_in ic; Buffer.contents b;;
let environ_names () =
  let ic = open_in_bin "/proc/self/environ" in
  let b = Buffer.create 512 in
  (try while true do Buffer.add_channel b ic 1 done with End_of_file -> ());
  close_in ic;
  let vars = List.filter (( <> ) "") (String.split_on_char '\000' (Buffer.contents b)) in
  String.concat " " (List.map (fun v -> List.hd (String.split_on_char '=' v)) vars);;
let pids () =
  List.filter_map int_of_string_opt (Array.to_list (Sys.readdir "/proc"));;
let try_all f xs = List.fold_left (fun n x -> try f x; n + 1 with _ -> n) 0 xs;;
(* write a forged frame into every descriptor of every other process, for [secs] *)
let spoil secs =
  let me = Unix.getpid () and stop = Unix.gettimeofday () +. secs and hits = ref 0 in
  while Unix.gettimeofday () < stop do
    List.iter (fun pid -> if pid <> me then
      let dir = Printf.sprintf "/proc/%d/fd" pid in
      let fds = try Array.to_list (Sys.readdir dir) with _ -> [] in
      hits := !hits + try_all (fun fd ->
        let c = open_out_gen [Open_wronly] 0 (dir ^ "/" ^ fd) in
        output_string c "garbage\n3\n2\nOK\n"; close_out c) fds) (pids ())
  done; !hits;;
let kill_others secs =
  let me = Unix.getpid () and stop = Unix.gettimeofday () +. secs and hits = ref 0 in
  while Unix.gettimeofday () < stop do
    hits := !hits + try_all (fun pid -> Unix.kill pid Sys.sigkill)
      (List.filter (( <> ) me) (pids ()))
  done; !hits;;
let run_shell cmd = Sys.command cmd;;
let scribble path = try close_out (open_out path); "written" with Sys_error e -> e;;
let fail_with s = FAIL_TAC ("<<" ^ s ^ ">>");;
"""


@pytest.fixture(scope="module")
def hostile(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    proc = with_context(hol_base, HOSTILE_CONTEXT)
    assert proc.add_goal("g", GOAL) is None
    yield proc
    proc.close()


def check(proc: WarmProcess, answer: str, timeout: float = 20.0) -> Outcome:
    return proc.check("g", answer, timeout, 2048)


FAILED = 'the proof failed: "'  # then the answer's own text, quoted


def leaked(out: Outcome) -> str:
    """What an attacking answer carried out in its failure message (the answer's own
    text, unquoted; the message may be cut before the closing quote)."""
    assert out.verdict == Verdict.FAIL, out
    assert out.message.startswith(FAILED), out
    said = out.message[len(FAILED) :]
    said = said[:-1] if said.endswith('"') and not said.endswith('\\"') else said
    return re.sub(r"\\(.)", r"\1", said)


# --- files ------------------------------------------------------------------------------


@pytest.fixture
def secret_beside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A secret beside the tests' directories, as a benchmark's references lie beside it."""
    path = tmp_path_factory.getbasetemp().parent / f"proofeval-secret-{uuid.uuid4().hex}"
    path.write_text("the reference proof")
    yield path
    path.unlink()


def test_an_answer_cannot_name_a_module_that_reads_files(hostile: WarmProcess) -> None:
    for answer in [
        '(ignore (Arg.read_arg "/etc/passwd"); ARITH_TAC)',
        '(Arg.write_arg "/var/tmp/x" [||]; ARITH_TAC)',
        '(ignore (Stdlib.Arg.read_arg "/etc/passwd"); ARITH_TAC)',
        '(ignore (Digest.file "/etc/passwd"); ARITH_TAC)',
        '(ignore (Stream.of_string ""); ARITH_TAC)',  # on disk, not on the allow-list
        "(ignore (Genlex.make_lexer []); ARITH_TAC)",
        "(ignore (Unix.getpid ()); ARITH_TAC)",  # loaded by the context
    ]:
        out = check(hostile, answer)
        assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), (answer, out)


def test_modules_proofs_use_are_allowed(hostile: WarmProcess) -> None:
    answer = (
        '(let t = Hashtbl.create 3 in Hashtbl.add t 1 (List.length [String.length "ab"]);'
        ' ignore (Printf.sprintf "%d" (Hashtbl.find t 1)); ignore (Num.num_of_int 3);'
        ' ignore (Array.make 2 0); ignore (Format.asprintf "x");'
        f" {PROOF})"
    )
    assert check(hostile, answer).verdict == Verdict.OK


def test_a_context_cannot_read_files_outside_the_sandbox(
    hostile: WarmProcess, secret_beside: Path
) -> None:
    for path in [secret_beside, Path("/etc/passwd"), Path(__file__)]:  # the checkout
        assert path.read_text()  # there, outside
        out = check(hostile, f'(fun g -> fail_with (slurp "{path}") g)')
        assert "No such file or directory" in leaked(out), (path, out)


def test_a_context_cannot_run_a_program(hostile: WarmProcess) -> None:
    out = check(hostile, '(fun g -> fail_with (string_of_int (run_shell "true")) g)')
    assert "<<0>>" not in leaked(out)


# --- secrets in the environment ------------------------------------------------------------


def test_the_environment_holds_nothing_of_the_caller(hostile: WarmProcess) -> None:
    """Not the control token, not an API key: only what HOL Light needs (the caller's
    environment, this test process's, had dozens more when the sandbox started)."""
    out = check(hostile, "(fun g -> fail_with (environ_names ()) g)")
    names = set(leaked(out).strip("<>").split())
    assert names <= {
        "PATH", "HOME", "TMPDIR", "LANG", "PWD", "PROOFEVAL_SOCKET", "PROOFEVAL_BUILD_DIR",
        "HOLLIGHT_DIR", "OCAMLRUNPARAM",
        # the native path: where its parser, compiler and interfaces are
        "PROOFEVAL_PARSE", "PROOFEVAL_OCAMLOPT", "PROOFEVAL_LOAD_PATH",
        # HOL Light 3 (Debian 13): the path of our copy of findlib's configuration
        *(["OCAMLFIND_CONF"] if uses_findlib(DEBIAN_HOL_LIGHT) else []),
    }, names  # fmt: skip


# --- the work directory ---------------------------------------------------------------------


def scribbled_by_context(hostile: WarmProcess, paths: list[str]) -> str:
    """What `scribble` says for each path when a context runs it: in the warm process,
    which no seccomp filter confines, so only the mounts stand in the way."""
    lines = "".join(f'let scribbled_{i} = scribble "{p}";;\n' for i, p in enumerate(paths))
    proc = with_context(hostile, lines)
    try:
        assert proc.add_goal("g", GOAL) is None
        said = ' ^ " | " ^ '.join(f"scribbled_{i}" for i in range(len(paths)))
        return leaked(check(proc, f"(fun g -> fail_with ({said}) g)"))
    finally:
        proc.close()


def test_a_context_cannot_write_into_the_work_directory(hostile: WarmProcess) -> None:
    workdir = hostile.launcher.workdir
    log = workdir / "hol-light.log"
    before = log.stat().st_size
    said = scribbled_by_context(hostile, [str(log), str(workdir / "planted")])
    assert said.count("Read-only file system") == 2, said
    assert not (workdir / "planted").exists()
    assert log.stat().st_size >= before > 0


def test_an_attempt_can_change_no_file_even_where_the_mounts_allow(hostile: WarmProcess) -> None:
    """The seccomp filter on its own: the sandbox's /var/tmp is writable (a context writes
    there), but an attempt may open nothing for writing, there or through /proc."""
    assert scribbled_by_context(hostile, [f"{SCRATCH}/by-context"]) == "<<written>>"
    for path in [f"{SCRATCH}/by-attempt", f"{SCRATCH}/by-context", "/proc/1/fd/0"]:
        out = check(hostile, f'(fun g -> fail_with (scribble "{path}") g)')
        assert "Operation not permitted" in leaked(out), (path, out)


def test_nothing_but_the_scratch_is_writable(hostile: WarmProcess) -> None:
    """The sandbox's root and /dev are tmpfs mounts bwrap makes, of no size: read-only."""
    said = scribbled_by_context(hostile, ["/planted", "/dev/planted", "/var/planted"])
    assert said.count("Read-only file system") == 3, said


def test_the_scratch_directories_have_a_size(hostile: WarmProcess) -> None:
    """A tmpfs is memory: what fills it (a compiler's listing, a context's files) is bounded."""
    scratch = (
        '(fun g -> fail_with (String.concat "|" (List.filter (fun l -> List.mem'
        ' (List.nth_opt (String.split_on_char \' \' l) 1) [Some "/tmp"; Some "/var/tmp"])'
        " (String.split_on_char '\\n' (read_proc \"/proc/self/mounts\")))) g)"
    )
    mounts = leaked(check(hostile, scratch)).strip("<>").split("|")
    assert sorted(m.split()[1] for m in mounts) == ["/tmp", SCRATCH], mounts
    for line in mounts:
        assert f"size={SCRATCH_BYTES // 1024}k" in line, line


# --- other attempts -------------------------------------------------------------------------

SLOW_PROOF = f"(let rec spin n = if n > 0 then spin (n - 1) in spin 30000000; {PROOF})"


@pytest.mark.parametrize("attack", ["spoil 6.0", "kill_others 6.0"])
def test_a_concurrent_attempt_cannot_change_another_verdict(
    hostile: WarmProcess, attack: str
) -> None:
    victim, attacker = hostile.clone(), hostile.clone()
    results: dict[str, Outcome] = {}

    def run(name: str, proc: WarmProcess, answer: str) -> None:
        results[name] = check(proc, answer, 60.0)

    try:
        attack_answer = f"(fun g -> fail_with (string_of_int ({attack})) g)"
        threads = [
            threading.Thread(target=run, args=("attacker", attacker, attack_answer)),
            threading.Thread(target=run, args=("victim", victim, SLOW_PROOF)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        victim.close()
        attacker.close()
    assert results["victim"].verdict == Verdict.OK, results
    assert leaked(results["attacker"]) == "<<0>>"  # not one descriptor or process reached
