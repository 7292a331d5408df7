"""`proofeval run --rounds R` end to end on Coq: the real HTTP stub server answers the
first prompt wrongly and the repair prompts as scripted, the real coqtop checks every
round, the real SQLite store keeps them; raised R continues a finished run; a real
subprocess killed mid-run resumes where it stopped."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.report.rounds import load_rounds, round_rows, rounds_document
from proofeval.store import RunStore
from tests.openai_stub import StubServer

pytestmark = pytest.mark.coq

ROOT = Path(__file__).resolve().parents[1]
HEADER = "Require Import Arith Lia."
# id: statement, then the answer of each round 0, 1, 2 (the last one repeats)
PROBLEMS = {
    "coq.add0": ("Theorem add0 : forall n : nat, n + 0 = n.", ["intros n.", "intros n. lia."]),
    "coq.le": (
        "Theorem le : forall a b : nat, a < b -> a <= b.",
        ["intros a b H. reflexivity.", "Admitted.", "intros a b H. lia."],
    ),
    "coq.never": ("Theorem never : forall n : nat, n * 1 = n + 1.", ["intros n. lia."]),
    "coq.easy": ("Theorem easy : 2 + 2 = 4.", ["reflexivity."]),
}


def fenced(proof: str) -> str:
    return f"Here it is.\n```coq\n{proof}\n```\n"


def responder(prompt: str) -> str | None:
    """Round r of a problem's sample gets that problem's r-th answer."""
    for statement, answers in PROBLEMS.values():
        if statement in prompt:
            number = 0
            for r in (1, 2, 3):
                if f"This was attempt {r}." in prompt:
                    number = r
            return fenced(answers[min(number, len(answers) - 1)])
    return None


def write_bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    rows = [
        {"id": pid, "prover": "coq", "category": "arith", "header": HEADER, "statement": s}
        for pid, (s, _) in PROBLEMS.items()
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run_args(bench: Path, run: Path, server: StubServer, rounds: int) -> list[str]:
    return ["run", str(bench), "--out", str(run), "--model", "stub", "--base-url", server.url,
            "--rounds", str(rounds), "--workers", "2"]  # fmt: skip


def repair_prompts(server: StubServer, number: int) -> list[str]:
    return [
        "\n".join(m["content"] for m in r.body["messages"])
        for r in server.requests
        if any(f"This was attempt {number}." in m["content"] for m in r.body["messages"])
    ]


def verdicts(run: Path) -> dict[tuple[str, int], str]:
    store = RunStore(run)
    try:
        found = {(r.problem_id, 0): r.verdict.value for r in store.results() if r.verdict}
        found |= {(r.problem_id, r.round): r.outcome.verdict.value for r in store.rounds()
                  if r.outcome}  # fmt: skip
    finally:
        store.close()
    return found


EXPECTED_TWO_ROUNDS = {
    ("coq.add0", 0): "FAIL", ("coq.add0", 1): "OK",
    ("coq.le", 0): "FAIL", ("coq.le", 1): "CHEATING", ("coq.le", 2): "OK",
    ("coq.never", 0): "FAIL", ("coq.never", 1): "FAIL", ("coq.never", 2): "FAIL",
    ("coq.easy", 0): "OK",
}  # fmt: skip


def test_repair_rounds_fix_failures_and_raising_r_continues(
    stub_server: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub_server.respond_with(responder)
    bench, run = write_bench(tmp_path), tmp_path / "run"
    assert main(run_args(bench, run, stub_server, 1)) == 0
    assert stub_server.count() == 4 + 3  # round 0, then a repair for each failure
    after_one = verdicts(run)
    assert after_one == {k: v for k, v in EXPECTED_TWO_ROUNDS.items() if k[1] <= 1}
    # The repair prompt carries the previous answer, its verdict and the goals left.
    [add0] = [p for p in repair_prompts(stub_server, 1) if "add0" in p]
    assert "Your previous answer was:" in add0 and "intros n." in add0
    assert "verdict on it: FAIL" in add0
    assert "n + 0 = n" in add0.split("Your previous answer was:")[1]  # the goal left

    assert main(run_args(bench, run, stub_server, 2)) == 0
    assert stub_server.count() == 7 + 2  # only round 2, for the two still failing
    assert verdicts(run) == EXPECTED_TWO_ROUNDS
    table = capsys.readouterr().out
    assert "After r rounds of repair" in table

    rows = round_rows(load_rounds(run))
    assert [(r.round, r.solved) for r in rows] == [(0, 1), (1, 2), (2, 3)]
    assert [r.pass_at[1] for r in rows] == [0.25, 0.5, 0.75]
    assert rows[0].tokens < rows[1].tokens < rows[2].tokens
    assert all(r.checker_seconds > 0 for r in rows)
    assert rounds_document(load_rounds(run))[2]["pass_at_k"] == {"1": 0.75}

    lines = (run / "repairs.jsonl").read_text().splitlines()
    exported = {(r["problem_id"], r["round"]): r["proof_status"] for r in map(json.loads, lines)}
    assert exported == {k: v for k, v in EXPECTED_TWO_ROUNDS.items() if k[1] > 0}

    with (run / "results.csv").open(newline="") as f:  # every round's attempt, with its round
        rows_csv = {(r["problem_id"], int(r["round"])): r["verdict"] for r in csv.DictReader(f)}
    assert rows_csv == EXPECTED_TWO_ROUNDS

    capsys.readouterr()
    assert main(["report", str(run), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["solved"] for r in doc["rounds"]] == [1, 2, 3]
    assert doc["round"] == 2 and doc["pass_at_k"] == {"1": 0.75}  # what the run ends with
    assert main(["report", str(run)]) == 0
    assert "figures after repair round 2" in capsys.readouterr().out
    assert main(["report", str(run), "--html", str(tmp_path / "html")]) == 0
    page = (tmp_path / "html" / "index.html").read_text()
    assert "Repair rounds" in page and "problems solved against repair rounds" in page
    assert "after round 2" in page


def test_a_run_killed_mid_round_resumes_without_asking_again(
    stub_server: StubServer, tmp_path: Path, scratch: Path
) -> None:
    stub_server.respond_with(responder)
    stub_server.script("This was attempt 2.", ["unused"], delays=[600.0])  # hangs round 2
    bench, run = write_bench(tmp_path), tmp_path / "run"
    cmd = [sys.executable, "-m", "proofeval.cli", *run_args(bench, run, stub_server, 2)]
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while round_two_rows(run) < 1:  # one sample's round 2 arrived, the other hangs
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "round 2 never arrived"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its coqtops
        proc.wait()
    # what the killed run could not remove (its checker's, its states'), not left in /tmp
    assert list(scratch.glob("proofeval-coq-*")), "the run's scratch was not in TMPDIR"
    db = sqlite3.connect(run / "proofeval.sqlite")
    query = "SELECT round, count(*), count(verdict) FROM repair_rounds GROUP BY round"
    kept = db.execute(query).fetchall()
    db.close()
    # Round 1 fully checked and kept; of round 2, the completion that arrived, unchecked.
    assert kept == [(1, 3, 3), (2, 1, 0)]
    asked_before = stub_server.count()

    assert main(run_args(bench, run, stub_server, 2)) == 0
    assert verdicts(run) == EXPECTED_TWO_ROUNDS
    # Resumed mid-round: rounds 0 and 1 not asked again, nor the round-2 completion kept.
    assert stub_server.count() - asked_before == 1


def round_two_rows(run: Path) -> int:
    if not (run / "proofeval.sqlite").exists():
        return 0
    db = sqlite3.connect(run / "proofeval.sqlite", timeout=30)
    try:
        return db.execute("SELECT count(*) FROM repair_rounds WHERE round = 2").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not there yet
        return 0
    finally:
        db.close()


def test_bad_repair_template_is_one_line_error(
    stub_server: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub_server.respond_with(responder)
    bad = tmp_path / "bad.j2"
    bad.write_text("{{ previous_proof }} {{ no_such_variable }}")
    bench, run = write_bench(tmp_path), tmp_path / "run"
    args = [*run_args(bench, run, stub_server, 1), "--repair-template", str(bad)]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "no_such_variable" in err and "Traceback" not in err
