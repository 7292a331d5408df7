"""The SQLite run store, on real files: resuming, changed proofs, threads, SIGKILL."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from proofeval.errors import InputError
from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict
from proofeval.store import FILE_NAME, SCHEMA_VERSION, ResultRow, RunStore

P1 = Problem(id="p1", statement="`1 + 1 = 2`", category="arith", header="let x = 1;;")
P2 = Problem(id="p2", statement="`T`", category="logic", timeout=3.0, reference="ACCEPT_TAC TRUTH")
A10 = Attempt("p1", 0, "```\nARITH_TAC\n```", "ARITH_TAC")
A11 = Attempt("p1", 1, "REFL_TAC", "REFL_TAC")
A20 = Attempt("p2", 0, "ACCEPT_TAC TRUTH", "ACCEPT_TAC TRUTH")
OK = Outcome(Verdict.OK, Stage.CHECK, 0.25, "")
FAIL = Outcome(Verdict.FAIL, Stage.CHECK, 0.5, 'Failure "REFL_TAC"\n  at line 1')


def filled(run_dir: Path) -> RunStore:
    store = RunStore(run_dir)
    store.add_problems([P2, P1])
    store.add_attempts([A20, A11, A10])
    return store


def test_new_store_has_schema_and_nothing_checked(tmp_path: Path):
    store = RunStore(tmp_path / "run" / "nested")
    store.close()
    db = sqlite3.connect(tmp_path / "run" / "nested" / FILE_NAME)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def test_contexts_are_not_copied_into_the_store(tmp_path: Path):
    # s2n-bignum: hundreds of problems, each context the inlined prefix of a long file.
    header = "let x = 1;;\n" * 20_000  # 240 kB
    problems = [
        Problem(id=f"p{i}", statement="`T`", header=header + f"(* {i} *)") for i in range(200)
    ]
    store = RunStore(tmp_path)
    store.add_problems(problems)
    assert [p.id for p in store.problems()][:2] == ["p0", "p1"]
    store.close()
    assert (tmp_path / FILE_NAME).stat().st_size < 1_000_000  # 48 MB of headers


def test_results_join_attempts_problems_and_verdicts(tmp_path: Path):
    store = filled(tmp_path)
    store.record(A11, FAIL)
    store.record(A20, OK)

    assert store.results() == [
        ResultRow("p1", 0, "arith", None, None, None, ""),
        ResultRow("p1", 1, "arith", Verdict.FAIL, Stage.CHECK, 0.5, FAIL.message),
        ResultRow("p2", 0, "logic", Verdict.OK, Stage.CHECK, 0.25, ""),
    ]
    assert store.outcome(A11) == FAIL
    assert store.outcome(A10) is None
    assert store.pending([A20, A11, A10]) == [A10]
    store.close()


def test_reopening_resumes(tmp_path: Path):
    store = filled(tmp_path)
    store.record(A10, OK)
    store.close()

    again = filled(tmp_path)
    assert again.outcome(A10) == OK
    assert again.pending([A10, A11, A20]) == [A11, A20]
    assert len(again.results()) == 3
    again.close()


def test_changed_proof_drops_its_verdict(tmp_path: Path):
    store = filled(tmp_path)
    store.record(A10, OK)
    store.record(A11, FAIL)
    changed = Attempt("p1", 0, "SIMP_TAC[]", "SIMP_TAC[]")
    same_proof = Attempt("p1", 1, "```\nREFL_TAC\n```", "REFL_TAC")

    store.add_attempts([changed, same_proof])

    assert store.outcome(changed) is None
    assert store.outcome(A10) is None  # gone, not merely hidden
    assert store.outcome(same_proof) == FAIL
    assert store.pending([changed, same_proof]) == [changed]
    assert store.results()[0] == ResultRow("p1", 0, "arith", None, None, None, "")
    store.close()


def test_problems_are_upserted(tmp_path: Path):
    store = filled(tmp_path)
    store.add_problems([Problem(id="p1", statement="`2 = 2`", category="renamed")])
    assert {row.category for row in store.results() if row.problem_id == "p1"} == {"renamed"}
    store.close()


def test_recording_again_replaces(tmp_path: Path):
    store = filled(tmp_path)
    store.record(A10, FAIL)
    store.record(A10, OK)
    assert store.outcome(A10) == OK
    store.close()


def test_threads_record_concurrently(tmp_path: Path):
    store = RunStore(tmp_path)
    store.add_problems([P1])
    attempts = [Attempt("p1", i, f"TAC{i}", f"TAC{i}") for i in range(200)]
    store.add_attempts(attempts)

    def work(chunk: list[Attempt]) -> None:
        for attempt in chunk:
            store.record(attempt, OK)
            store.outcome(attempt)

    threads = [threading.Thread(target=work, args=(attempts[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert store.pending(attempts) == []
    assert [row.attempt for row in store.results()] == list(range(200))
    store.close()


RECORDER = """
import sys, time
from pathlib import Path
from proofeval.model import Generation, Attempt, Outcome, Stage, Verdict
from proofeval.store import RunStore

store = RunStore(Path(sys.argv[1]))
for i in range(20):
    store.record(Attempt("p1", i, "TAC", "TAC"), Outcome(Verdict.OK, Stage.CHECK, 0.1))
print("recorded", flush=True)
time.sleep(60)
"""


def test_verdicts_survive_sigkill(tmp_path: Path):
    store = RunStore(tmp_path)
    store.add_problems([P1])
    attempts = [Attempt("p1", i, "TAC", "TAC") for i in range(21)]
    store.add_attempts(attempts)
    store.close()

    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RECORDER), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "recorded\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL

    reopened = RunStore(tmp_path)
    assert reopened.pending(attempts) == [attempts[20]]
    assert reopened.outcome(attempts[0]) == Outcome(Verdict.OK, Stage.CHECK, 0.1)
    reopened.close()


def test_not_a_store(tmp_path: Path):
    (tmp_path / FILE_NAME).write_bytes(b"this is not sqlite at all, just text" * 100)
    with pytest.raises(InputError, match="not a proofeval run store") as caught:
        RunStore(tmp_path)
    assert str(tmp_path / FILE_NAME) in str(caught.value)


def test_other_schema_version(tmp_path: Path):
    RunStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / FILE_NAME)
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(InputError, match="version 99") as caught:
        RunStore(tmp_path)
    assert str(tmp_path / FILE_NAME) in str(caught.value)


def test_run_dir_that_is_a_file(tmp_path: Path):
    (tmp_path / "run").write_text("")
    with pytest.raises(InputError, match="cannot create the run directory") as caught:
        RunStore(tmp_path / "run")
    assert str(tmp_path / "run") in str(caught.value)


def test_generations_are_kept_and_replaced(tmp_path: Path):
    store = RunStore(tmp_path)
    first = Generation("p1", 0, "prompt", "out", "m", 10, 20, 1.5)
    store.record_generation(first)
    store.record_generation(Generation("p1", 1, "prompt", "other", "m", 10, 5, 0.5))
    store.close()
    store = RunStore(tmp_path)
    assert store.generations()[0] == first
    store.record_generation(Generation("p1", 0, "prompt", "new", "m", 10, 20, 1.5))
    assert [g.output for g in store.generations()] == ["new", "other"]
    store.close()
