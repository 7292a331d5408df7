"""Scores that cannot be inflated: a misspelt answer id, a problem with no attempt and a
misspelt prover name, through `proofeval check`, `report` and the API, on real Coq and a
real SQLite store."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proofeval.api import Checker, problem
from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark
from proofeval.model import Verdict
from proofeval.provers.registry import check_error, prover_error

pytestmark = pytest.mark.coq

HEADER = "Require Import Arith Lia."
PROBLEMS = [
    {"id": "add_zero", "prover": "coq", "category": "arith", "header": HEADER,
     "statement": "Theorem add_zero : forall n : nat, n + 0 = n."},
    {"id": "mul_one", "prover": "coq", "category": "arith", "header": HEADER,
     "statement": "Theorem mul_one : forall n : nat, n * 1 = n."},
]  # fmt: skip


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def answers(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem_id", "answer"])
        w.writerows(rows)
    return path


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "bench.jsonl", PROBLEMS)


def test_a_misspelt_answer_id_is_an_error_that_names_the_id_meant(
    bench: Path, tmp_path: Path, capsys
) -> None:
    file = answers(tmp_path / "a.csv", [("add_zero", "intros. lia."), ("mul_onе", "lia.")])
    code = main(["check", str(bench), "--answers", str(file), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert "1 answer for 1 unknown problem id: 'mul_onе' (did you mean 'mul_one'?)" in err
    assert "--allow-unknown" in err
    assert err.count("\n") == 1  # one line, whatever the number of unknown ids


def test_many_unknown_ids_are_one_line_with_a_few_examples(bench: Path, tmp_path: Path, capsys):
    rows = [("add_zero", "lia.")] + [(f"other_{i}", "lia.") for i in range(400)]
    file = answers(tmp_path / "a.csv", rows)
    assert main(["check", str(bench), "--answers", str(file), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "400 answers for 400 unknown problem ids: 'other_0', 'other_1'" in err
    assert ", ..." in err


def test_allow_unknown_checks_the_rest_and_the_unanswered_problem_counts_as_unsolved(
    bench: Path, tmp_path: Path, capsys
) -> None:
    file = answers(tmp_path / "a.csv", [("add_zero", "intros. lia."), ("mul_onе", "lia.")])
    run = tmp_path / "run"
    argv = ["check", str(bench), "--answers", str(file), "--out", str(run), "--allow-unknown"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    total = captured.out.strip().splitlines()[-1].split()
    # Problems 2, Attempts 1, Eval 1, OK 1 ... OK/Tot 50%: never 1/1 = 100%
    assert total[:5] == ["Total", "2", "1", "1", "1"] and total[-1] == "50.0%"
    assert "warning:" in captured.err and "did you mean 'mul_one'?" in captured.err
    assert "unsolved, never checked: 1 problem with no checked attempt (mul_one)" in captured.err
    assert "starting coqtop" not in captured.err  # a context starting is a count in the bar
    assert "contexts=1" in captured.err

    assert main(["report", str(run), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pass_at_k"] == {"1": 0.5}
    assert doc["pass_at_1"]["mean"] == 0.5 and doc["pass_at_1"]["problems"] == 2
    assert doc["ok_share"] == 0.5 and doc["unevaluated_problems"] == ["mul_one"]
    assert main(["report", str(run)]) == 0
    text = capsys.readouterr().out
    assert "pass@1 50.0%" in text and "(mul_one)" in text


@pytest.mark.parametrize(
    ("given", "meant"), [("hol_light", "hol-light"), ("Coq", "coq"), ("Rocq", "coq")]
)
def test_a_misspelt_prover_is_an_input_error_with_the_name_meant(
    tmp_path: Path, given: str, meant: str
) -> None:
    bench = write_jsonl(tmp_path / "b.jsonl", [{**PROBLEMS[0], "prover": given}])
    with pytest.raises(
        InputError, match=rf"b\.jsonl:1: unknown prover '{given}': did you mean {meant}\?"
    ):
        load_benchmark(bench)
    assert prover_error(given) is not None and check_error(given) is not None


def test_a_misspelt_prover_stops_check_before_anything_is_written(tmp_path: Path, capsys):
    bench = write_jsonl(tmp_path / "b.jsonl", [{**PROBLEMS[0], "prover": "hol_light"}])
    file = answers(tmp_path / "a.csv", [("add_zero", "lia.")])
    run = tmp_path / "run"
    assert main(["check", str(bench), "--answers", str(file), "--out", str(run)]) == 2
    assert "did you mean hol-light?" in capsys.readouterr().err
    assert not run.exists()


def test_a_prover_without_a_checker_is_refused_by_check_but_listed(tmp_path: Path, capsys):
    lean = {"name": "t", "formal_statement": "theorem t : True := by", "split": "test"}
    bench = write_jsonl(tmp_path / "nemo.jsonl", [lean])
    assert main(["problems", str(bench)]) == 0
    assert capsys.readouterr().out == "t\ttest\n"  # NeMo-Skills' split is the category
    file = answers(tmp_path / "a.csv", [("t", "trivial")])
    assert main(["check", str(bench), "--answers", str(file), "--out", str(tmp_path / "r")]) == 2
    assert "no checker for prover 'lean4'" in capsys.readouterr().err


def test_the_api_answers_a_misspelt_prover_with_an_error_outcome_not_an_exception() -> None:
    good = problem("coq", PROBLEMS[0]["statement"], HEADER)
    with Checker() as checker:
        outcomes = checker.check(
            [
                (problem("hol_light", "`T`"), "ACCEPT_TAC TRUTH"),
                (good, "intros. lia."),
                (problem("lean4", "theorem t : True"), "trivial"),
                (problem("Coq", PROBLEMS[0]["statement"], HEADER), "intros. lia."),
            ]
        )
    assert [o.verdict for o in outcomes] == [
        Verdict.ERROR,
        Verdict.OK,
        Verdict.ERROR,
        Verdict.ERROR,
    ]
    assert "unknown prover 'hol_light': did you mean hol-light?" in outcomes[0].message
    assert "no checker for prover 'lean4'" in outcomes[2].message
    assert "did you mean coq?" in outcomes[3].message
