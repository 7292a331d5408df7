"""`proofeval check --feedback on`: every FAIL of a run carries structured feedback (the
goals left, or the step that failed and its goals), in the store, feedback.jsonl and
`report --json`; results.csv keeps its columns; with it off nothing is computed. Real
HOL Light (the session's native core) and real coqtop."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.model import Attempt
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.json_report import run_document
from proofeval.report.run_data import load_run
from proofeval.runs.check import CheckOptions, run_check
from proofeval.states.feedback import Feedback, attempt_feedback
from proofeval.store import RunStore
from tests.conftest import FORALL

pytestmark = pytest.mark.coq

COLUMNS = ["problem_id", "attempt", "category", "verdict", "stage", "seconds", "message", "round"]
HOL = [
    {"id": "hol.both", "prover": "hol-light", "category": "arith",
     "statement": "`!n. n + 0 = n /\\ 0 + n = n`"},
    {"id": "hol.mul", "prover": "hol-light", "category": "arith", "statement": "`!n. n * 1 = n`"},
]  # fmt: skip
HOL_ANSWERS = [
    ("hol.both", "ACCEPT_TAC TRUTH"),  # fails at once: step 0, the statement's goal
    ("hol.both", "GEN_TAC THEN CONJ_TAC THENL [ARITH_TAC; ALL_TAC]"),  # a goal left
    ("hol.both", "GEN_TAC THEN CONJ_TAC THEN ARITH_TAC"),  # OK
    ("hol.mul", "CHEAT_TAC"),  # CHEATING: no feedback
]
COQ_HEADER = "Require Import Arith Lia."
COQ = [
    {"id": "coq.both", "prover": "coq", "category": "arith", "header": COQ_HEADER,
     "statement": "Theorem both : forall n : nat, n + 0 = n /\\ 0 + n = n."},
    {"id": "coq.le", "prover": "coq", "category": "order", "header": COQ_HEADER,
     "statement": "Theorem le : forall a b : nat, a < b -> a <= b."},
]  # fmt: skip
COQ_ANSWERS = [
    ("coq.both", "intros n. split. lia."),  # every sentence runs, a goal is left
    ("coq.le", "intros a b H. reflexivity. lia."),  # the second sentence fails
    ("coq.le", "intros. lia."),  # OK
]


def bench(tmp_path: Path, problems: list[dict], answers: list[tuple[str, str]]) -> CheckOptions:
    problems_file = tmp_path / "bench.jsonl"
    problems_file.write_text("".join(json.dumps(p) + "\n" for p in problems))
    answers_file = tmp_path / "answers.jsonl"
    lines = (json.dumps({"problem_id": pid, "answer": a}) + "\n" for pid, a in answers)
    answers_file.write_text("".join(lines))
    return CheckOptions(problems_file, tmp_path / "run", answers=answers_file, timeout=60.0,
                        settings=CheckSettings(workers=1))  # fmt: skip


def stored(run: Path, problem_id: str, index: int, proof: str) -> Feedback | None:
    store = RunStore(run)
    try:
        return attempt_feedback(store, Attempt(problem_id, index, proof, proof))
    finally:
        store.close()


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_hol_light_fails_carry_feedback(hol_native_base: WarmProcess, tmp_path: Path) -> None:
    opts = bench(tmp_path, HOL, HOL_ANSWERS)
    run_check(opts, warm={"hol-light": hol_native_base})  # feedback off: nothing computed
    assert not (opts.out / "feedback.jsonl").exists()
    assert stored(opts.out, "hol.both", 0, HOL_ANSWERS[0][1]) is None
    rows = run_check(replace_feedback(opts), warm={"hol-light": hol_native_base})
    assert [r.verdict.value for r in rows if r.verdict] == ["FAIL", "FAIL", "OK", "CHEATING"]
    failed = stored(opts.out, "hol.both", 0, HOL_ANSWERS[0][1])
    assert failed is not None and failed.step == 0 and failed.tactic == HOL_ANSWERS[0][1]
    assert failed.goals == (f"`{FORALL}n. n + 0 = n /\\ 0 + n = n`",)
    assert "ACCEPT_TAC" in failed.message
    left = stored(opts.out, "hol.both", 1, HOL_ANSWERS[1][1])
    assert left == Feedback(("`0 + n = n`",), 0, None, "", "goals are left")
    assert stored(opts.out, "hol.both", 2, HOL_ANSWERS[2][1]) is None  # an OK has none
    assert stored(opts.out, "hol.mul", 0, "CHEAT_TAC") is None  # nor a CHEATING
    entries = jsonl(opts.out / "feedback.jsonl")
    assert [(e["problem_id"], e["attempt"], e["verdict"]) for e in entries] == [
        ("hol.both", 0, "FAIL"), ("hol.both", 1, "FAIL")]  # fmt: skip
    assert entries[1]["feedback"]["goals"] == ["`0 + n = n`"]
    with (opts.out / "results.csv").open(newline="") as f:
        assert next(csv.reader(f)) == COLUMNS  # its columns are unchanged
    doc = run_document(load_run(opts.out))
    assert doc["feedback"] == entries


def replace_feedback(opts: CheckOptions) -> CheckOptions:
    return replace(opts, feedback=True)


def test_coq_fails_carry_feedback_through_the_cli(tmp_path: Path, capsys) -> None:
    opts = bench(tmp_path, COQ, COQ_ANSWERS)
    args = ["check", str(opts.problems), "--answers", str(opts.answers), "--out",
            str(opts.out), "--workers", "1", "--feedback", "on"]  # fmt: skip
    assert main(args) == 0
    assert "feedback on 2 FAILs" in capsys.readouterr().err
    left = stored(opts.out, "coq.both", 0, COQ_ANSWERS[0][1])
    assert left is not None and left.step is None and left.message == "goals are left"
    assert len(left.goals) == 1 and "0 + n = n" in left.goals[0]
    failed = stored(opts.out, "coq.le", 0, COQ_ANSWERS[1][1])
    assert failed is not None and (failed.step, failed.tactic) == (1, "reflexivity.")
    assert "a <= b" in failed.goals[0] and "H : a < b" in failed.goals[0]
    assert failed.message  # Coq's error
    assert stored(opts.out, "coq.le", 1, COQ_ANSWERS[2][1]) is None
    assert main(["report", str(opts.out), "--json", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(e["problem_id"], e["feedback"]["failed_step"]) for e in doc["feedback"]] == [
        ("coq.both", None), ("coq.le", 1)]  # fmt: skip


def test_feedback_needs_this_machines_provers(tmp_path: Path) -> None:
    opts = replace_feedback(bench(tmp_path, COQ, COQ_ANSWERS))
    with pytest.raises(InputError, match="not with --ray"):
        run_check(replace(opts, remote=lambda *_: None))
