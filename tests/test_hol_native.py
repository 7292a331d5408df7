"""What only the native path does: choosing it, compiling contexts once, the contexts only
the toplevel accepts, and parsing and compiling each answer within the attempt's limits.
(Verdicts and integrity on both paths: test_hol_integrity.py, test_hol_isolation.py,
test_hol_provenance.py, test_hol_forged_theorems.py, test_hol_syscalls.py,
test_hol_pool.py, test_demo.py.)"""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from proofeval.errors import CheckerError, InputError
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.native import choose, compile_context
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from tests.conftest import with_context

GOAL = "`!n. n + 0 = n`"


def test_a_weakly_typed_function_of_a_context_is_usable_at_any_type(
    hol_native_base: WarmProcess,
) -> None:
    """The toplevel leaves `'_weak` in such a type until a use fixes it; a compiled module
    may not, so the parser eta-expands it, and answers use it at two types."""
    header = "let all_ids = map (fun x -> x);;\nlet MY_TAC = ARITH_TAC;;\n"
    proc = with_context(hol_native_base, header)
    try:
        assert proc.add_goal("g", GOAL) is None
        answer = "(if all_ids [1] = [1] && all_ids [true] = [true] then MY_TAC else NO_TAC)"
        assert proc.check("g", answer, 30.0, 4096).verdict == Verdict.OK
    finally:
        proc.close()


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        # OCaml 4.13 says the type variables "cannot be generalized", 5.3 "non-generalizable"
        ("let cache = ref [];;\n", r"cannot be generalized|non-generalizable type variable"),
        ('let x = 1;;\n#use "other.ml";;\n', "the directive #use cannot be compiled natively"),
    ],
)
def test_a_context_only_the_toplevel_accepts_says_why_and_what_to_do(
    hol_native_base: WarmProcess, header: str, reason: str
) -> None:
    proc = hol_native_base.clone()
    try:
        with pytest.raises(CheckerError) as failed:
            proc.load(hol_native_base.launcher.scratch_file("context", header), "")
        assert re.search(reason, str(failed.value)) and "--native off" in str(failed.value)
    finally:
        proc.close()


def test_a_large_file_splits_as_on_the_bytecode_path(
    hol_native_base: WarmProcess, hol_base: WarmProcess
) -> None:
    """The parser's reply for a large file runs to hundreds of KiB (it was once cut at 64)."""
    big = DEBIAN_HOL_LIGHT / "Multivariate" / "vectors.ml"
    assert hol_native_base.split(big) == hol_base.split(big)


def test_a_context_is_compiled_once(hol_native_base: WarmProcess) -> None:
    native = hol_native_base.launcher.native
    assert native is not None
    text = "let compiled_once = 42;;\n"
    plugin = compile_context(native, text, ["Proofeval_hol_core"])
    made = plugin.stat().st_mtime_ns
    assert compile_context(native, text, ["Proofeval_hol_core"]) == plugin
    assert plugin.stat().st_mtime_ns == made
    # the same text on top of another context is another module
    assert compile_context(native, text, ["Proofeval_hol_core", plugin.stem.capitalize()]) != plugin


def test_native_on_refuses_a_hol_light_it_cannot_build_and_auto_falls_back(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "hol-light"
    tree.mkdir()
    shutil.copy(DEBIAN_HOL_LIGHT / "hol.ml", tree / "hol.ml")  # no pa_j.cmo beside it
    with pytest.raises(InputError, match="pa_j.cmo"):
        choose(tree, "on", print)
    said: list[str] = []
    assert choose(tree, "auto", said.append) is None
    assert len(said) == 1 and "bytecode" in said[0] and "pa_j.cmo" in said[0]
    assert choose(tree, "off", said.append) is None and len(said) == 1


# About 780 KB: camlp5 alone once spent minutes of CPU on an answer this size.
HUGE = "REWRITE_TAC[" + "ADD_CLAUSES; " * 60000 + "ADD_CLAUSES]"

SCRATCH_LISTING = """(let in_dir d = List.map (Filename.concat d) (Array.to_list (Sys.readdir d)) in
  String.concat " " (List.concat_map
    (fun p -> if Sys.is_directory p then in_dir p else [p]) (in_dir "/var/tmp")))"""


def test_a_huge_answer_is_an_error_within_its_timeout_and_leaves_nothing(
    hol_native_base: WarmProcess,
) -> None:
    """The parser and the compilers spend the attempt's time (wall clock and CPU), in a
    scratch directory removed when the deadline kills them; the sandbox's scratch then
    holds no camlasm*.s, source or parse tree, only each process's last plugin."""
    proc = hol_native_base.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        start = time.monotonic()
        out = proc.check("g", HUGE, 5.0, 2048)
        took = time.monotonic() - start
        assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK), out
        assert "within its 5s" in out.message, out
        assert took < 5.0 + 3.0
        left = [
            p for p in proc.eval_string(SCRATCH_LISTING).split() if "proofeval_compile" in p
            or "camlasm" in p or "/cc" in p
        ]  # fmt: skip
        assert left and all(p.endswith("/answer.cmxs") for p in left), left
        assert proc.check("g", "ARITH_TAC", 30.0, 2048).verdict == Verdict.OK
    finally:
        proc.close()


def parser_processes(native_parser: Path) -> list[dict[str, str]]:
    """The warm parser (proofeval_parse serve) and its forks now running: each one's
    pid, session, seccomp mode and limits, as /proc shows them."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if argv[:2] != [str(native_parser).encode(), b"serve"]:
                continue
            status = dict(
                line.split(":\t", 1) for line in (entry / "status").read_text().splitlines()
            )
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            limits = (entry / "limits").read_text()
        except (OSError, ValueError):
            continue  # not a process, or it ended meanwhile
        found.append(
            {
                "pid": entry.name,
                "session": stat[3],
                "seccomp": status["Seccomp"].strip(),
                "limits": limits,
            }  # fmt: skip
        )
    return found


def test_each_answer_is_parsed_and_compiled_in_a_confined_fork(
    hol_native_base: WarmProcess,
) -> None:
    """The warm parser reads no answer itself: a fork of it does, after confining itself
    as the external tools were: a session of its own (killed whole at the deadline), the
    attempt's memory and time, and the compilers' system-call filter."""
    native = hol_native_base.launcher.native
    assert native is not None
    proc = hol_native_base.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        done: list[Verdict] = []
        checking = threading.Thread(
            target=lambda: done.append(proc.check("g", HUGE, 20.0, 2048).verdict)
        )
        checking.start()
        confined: list[dict[str, str]] = []
        while checking.is_alive() and not confined:
            confined = [p for p in parser_processes(native.parser) if p["seccomp"] == "2"]
            time.sleep(0.02)
        checking.join()
    finally:
        proc.close()
    assert confined, "no confined fork seen while the huge answer was compiled"
    fork = confined[0]
    assert fork["session"] == fork["pid"]
    assert re.search(r"Max address space\s+2147483648\s", fork["limits"])
    cpu = re.search(r"Max cpu time\s+(\d+)\s", fork["limits"])
    assert cpu and 1 <= int(cpu.group(1)) <= 20
    assert done == [Verdict.ERROR]


def test_a_warm_parser_that_died_is_replaced(hol_native_base: WarmProcess) -> None:
    native = hol_native_base.launcher.native
    assert native is not None
    proc = hol_native_base.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        assert proc.check("g", "ARITH_TAC", 30.0, 2048).verdict == Verdict.OK
        warm = [p for p in parser_processes(native.parser) if p["seccomp"] == "0"]
        assert warm
        for p in warm:
            os.kill(int(p["pid"]), signal.SIGKILL)
        out = proc.check("g", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]", 30.0, 2048)
        assert out.verdict == Verdict.OK, out
    finally:
        proc.close()


def reaped_ticks_and_zombies(pid: str) -> tuple[int, int]:
    """The CPU ticks of the children `pid` waited for, and how many of its children are
    zombies (ended, not yet waited for)."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    zombies = 0
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        zombies += fields[1] == pid and fields[0] == "Z"
    return int(stat[13]) + int(stat[14]), zombies


def test_the_parsers_forks_are_waited_for_so_their_cpu_is_counted(
    hol_native_base: WarmProcess,
) -> None:
    """Each answer's fork is waited for by the warm parser: a fork nobody waits for has its
    CPU counted nowhere (not in the parser's, nor in anything that measures the check),
    and parsing is a share of each small attempt's cost. At most the last one waits as a
    zombie for the next connection."""
    native = hol_native_base.launcher.native
    assert native is not None
    proc = hol_native_base.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        assert proc.check("g", "ALL_TAC", 30.0, 2048).verdict == Verdict.FAIL
        warm = [p["pid"] for p in parser_processes(native.parser) if p["seccomp"] == "0"]
        before = {pid: reaped_ticks_and_zombies(pid) for pid in warm}
        for _ in range(60):  # some 2 ms of CPU each: a clock tick is 10 ms
            assert proc.check("g", "REWRITE_TAC[MULT_CLAUSES]", 30.0, 2048).verdict == (
                Verdict.FAIL
            )
        after = {pid: reaped_ticks_and_zombies(pid) for pid in warm}
    finally:
        proc.close()
    assert sum(after[p][0] - before[p][0] for p in warm) >= 3, (before, after)
    assert all(zombies <= 1 for _, zombies in after.values()), after


def test_long_and_short_answers_compile_alike(hol_native_base: WarmProcess) -> None:
    """An answer over 512 bytes is compiled by ocamlopt.opt, a shorter one by the warm
    parser's own passes: the same verdicts, and the same reason for a type error."""
    padding = "ADD_CLAUSES; " * 60
    proc = hol_native_base.clone()
    try:
        assert proc.add_goal("g", GOAL) is None
        assert proc.check("g", f"REWRITE_TAC[{padding}ADD_CLAUSES]", 30.0, 2048).verdict == (
            Verdict.OK
        )
        short = proc.check("g", "REWRITE_TAC[1]", 30.0, 2048)
        long = proc.check("g", f"REWRITE_TAC[{padding}1]", 30.0, 2048)
    finally:
        proc.close()
    for out in (short, long):
        assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK), out
    assert "does not type-check as a tactic" in short.message
    # OCaml 5.3's ocamlopt.opt quotes code in what it prints to a file; its passes here do not
    assert "type int" in short.message
    assert short.message == long.message.replace('"', "")


# each answer with the hint its unbound name gets (None: none); {p} is where padding goes
UNBOUND = {
    "REWRITE_TAC[{p}MULT_CLAUSE]": "MULT_CLAUSES",
    "REWRITE_TAC[{p}MUL_CLAUS]": "MULT_CLAUSES",  # three edits, the most there can be
    "REWRITE_TAC[{p}MULT_CALUSES]": "MULT_CLAUSES",  # two neighbours swapped: one edit
    "REWRITE_TAC[{p}AD_CLAUSS]": "ADD_CLAUSES or AND_CLAUSES",  # two edits each
    "REWRTE_TAC[{p}MULT_CLAUSES]": "REWRITE_TAC",
    "REWRITE_TAC[{p}FOO_BAR_BAZ]": None,
    "let mult_clause = MULT_CLAUSES in REWRITE_TAC[{p}mult_clauses]": "mult_clause",
    "let tac_aa = ALL_TAC and tac_ab = ALL_TAC in REWRITE_TAC[{p}ADD_CLAUSES] THEN tac_ac": (
        "tac_aa or tac_ab"
    ),
}


def test_an_unbound_names_hint_is_the_compilers_on_both_paths(
    hol_native_base: WarmProcess, hol_base: WarmProcess
) -> None:
    """The hint for an unbound value is made from only the names that can be within its
    cutoff (proofeval_hints.ml): the same message as ocamlopt.opt's own (an answer over
    512 bytes) and the bytecode toplevel's, for a global name, a local one, none, and a
    tie, for names up to the most edits a hint allows."""
    padding = "ADD_CLAUSES; " * 60
    messages: dict[str, list[str]] = {}
    # native: the warm parser's passes, then ocamlopt.opt; bytecode: the toplevel
    for base, pads in ((hol_native_base, ("", padding)), (hol_base, ("",))):
        proc = base.clone()
        try:
            assert proc.add_goal("g", GOAL) is None
            for answer in UNBOUND:
                for p in pads:
                    out = proc.check("g", answer.format(p=p), 30.0, 2048)
                    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK), out
                    messages.setdefault(answer, []).append(out.message.replace('"', ""))
        finally:
            proc.close()
    for answer, (short, long, bytecode) in messages.items():
        assert short == long == bytecode, answer
        hint = UNBOUND[answer]
        if hint is None:
            assert "Hint" not in short, short
        else:
            assert short.endswith(f"Hint: Did you mean {hint}?"), short
