"""One benchmark file that mixes provers: checked by one command, in parallel, into one
run directory and one report, each problem by its own prover's checker."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proofeval.checking.engine import check_all
from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.json_report import run_document
from proofeval.report.run_data import load_run
from proofeval.runs.check import CheckOptions, run_check

COQ_HEADER = "Require Import Arith Lia."
PROBLEMS = [
    {"id": "hol.add_0", "prover": "hol-light", "category": "hol", "statement": "`!n. n + 0 = n`"},
    {"id": "hol.add_sym", "prover": "hol-light", "category": "hol",
     "statement": "`!m n. m + n = n + m`"},
    {"id": "coq.add_0", "prover": "coq", "category": "coq", "header": COQ_HEADER,
     "statement": "Theorem add_0 : forall n : nat, n + 0 = n."},
    {"id": "coq.add_sym", "prover": "coq", "category": "coq", "header": COQ_HEADER,
     "statement": "Theorem add_sym : forall m n : nat, m + n = n + m."},
]  # fmt: skip
ANSWERS = [
    ("hol.add_0", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]", "OK"),
    ("hol.add_sym", "REWRITE_TAC[]", "FAIL"),
    ("hol.add_sym", "CHEAT_TAC", "CHEATING"),
    ("coq.add_0", "intros. lia.", "OK"),
    ("coq.add_sym", "Admitted.", "CHEATING"),
    ("coq.add_sym", "intros. reflexivity.", "FAIL"),
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_one_file_with_both_provers_checks_into_one_run(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    answers = [{"problem_id": p, "answer": a} for p, a, _ in ANSWERS]
    opts = CheckOptions(
        problems=write_jsonl(tmp_path / "mixed.jsonl", PROBLEMS),
        answers=write_jsonl(tmp_path / "answers.jsonl", answers),
        out=tmp_path / "run",
        settings=CheckSettings(workers=2, coqchk=True),
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    got = [(r.problem_id, r.verdict.value if r.verdict else None) for r in rows]
    assert sorted(got) == sorted((p, v) for p, _, v in ANSWERS)
    with (tmp_path / "run" / "results.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == len(ANSWERS)
    doc = run_document(load_run(tmp_path / "run"))
    assert set(doc["categories"]) >= {"hol", "coq"}, doc["categories"]


def test_a_prover_without_a_checker_is_one_clear_error() -> None:
    problem = Problem(id="p", statement="theorem p : True", prover="lean4")
    with pytest.raises(InputError, match="no checker for prover 'lean4'"):
        check_all([], [problem], CheckSettings(), lambda a, o: None)
