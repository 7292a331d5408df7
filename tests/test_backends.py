"""A prover is one backend: a toy prover added through the registry alone is loaded,
prompted for, extracted, checked by `proofeval check` and the API, and validated; and
what the real backends declare is what every command honours (aliases).

The toy prover is a fake, as no third real prover exists here: its "kernel" decides an
equation of natural numbers by evaluating both sides, and its answers are the word
`compute`. It needs no prover process, so these tests run in the fast lane."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from proofeval.api import Checker, problem
from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.generate.extract import extract
from proofeval.generate.prompts import render
from proofeval.loaders import load_benchmark
from proofeval.model import Outcome, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import Backend, SharedProcess
from proofeval.provers.interface import (
    Checker as CheckerProtocol,
)
from proofeval.provers.interface import (
    CheckSettings,
    EventCallback,
    Job,
    ResultCallback,
)

EQUATION = re.compile(r"\s*(\d+)\s*\+\s*(\d+)\s*=\s*(\d+)\s*")


class ToyChecker:
    def __init__(self, on_result: ResultCallback) -> None:
        self.on_result = on_result

    def run(self, jobs: Iterable[Job], problems: Iterable[Problem]) -> None:
        for job in jobs:
            self.on_result(job.attempt, self._verdict(job.problem.statement, job.attempt.proof))

    @staticmethod
    def _verdict(statement: str, proof: str) -> Outcome:
        if proof.strip() != "compute":
            return Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, "the only tactic is compute")
        a, b, c = map(int, EQUATION.fullmatch(statement).groups())  # type: ignore[union-attr]
        if a + b == c:
            return Outcome(Verdict.OK, Stage.CHECK, 0.0)
        return Outcome(Verdict.FAIL, Stage.CHECK, 0.0, f"{a} + {b} is {a + b}")


def _toy_checker(
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback,
    shared: SharedProcess | None,
) -> CheckerProtocol:
    return ToyChecker(on_result)


def _answer(proof: str, statement: str) -> str:
    return proof.removeprefix("by ")


TOY = Backend(
    name="toy",
    title="Toy Arithmetic",
    fence="toy",
    aliases=("toy-arith",),
    checker=_toy_checker,
    answer=_answer,
    probe="compute",
)

ROWS = [
    {"id": "true_sum", "prover": "toy", "statement": "2 + 2 = 4"},
    {"id": "false_sum", "prover": "toy-arith", "statement": "2 + 2 = 5"},
]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    monkeypatch.setitem(registry.BACKENDS, TOY.name, TOY)
    yield TOY


@pytest.fixture
def bench(tmp_path: Path, toy: Backend) -> Path:
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_a_registered_prover_is_known_checkable_and_its_alias_honoured(toy: Backend) -> None:
    assert "toy" in registry.supported() and "toy" in registry.known()
    assert registry.check_error("toy-arith") is None
    assert registry.canonical("toy-arith") == "toy"
    assert "did you mean toy?" in (registry.prover_error("TOY") or "")


def test_its_problems_load_under_its_own_name_and_get_its_prompt(bench: Path) -> None:
    problems = load_benchmark(bench).problems
    assert [p.prover for p in problems] == ["toy", "toy"]
    prompt = render("formal_proof", problems[0])
    assert "Toy Arithmetic" in prompt and "```toy" in prompt


def test_its_answers_are_extracted_by_its_rule(toy: Backend) -> None:
    assert extract("Here:\n```toy\nby compute\n```", "toy") == "compute"


def test_proofeval_check_checks_it(bench: Path, tmp_path: Path, capsys) -> None:
    answers = tmp_path / "answers.csv"
    with answers.open("w", newline="") as f:
        csv.writer(f).writerows(
            [["problem_id", "answer"], ["true_sum", "compute"], ["false_sum", "```\ncompute\n```"]]
        )
    out = tmp_path / "run"
    assert main(["check", str(bench), "--answers", str(answers), "--out", str(out)]) == 0
    with (out / "results.csv").open() as f:
        verdicts = {row["problem_id"]: row["verdict"] for row in csv.DictReader(f)}
    assert verdicts == {"true_sum": "OK", "false_sum": "FAIL"}


def test_the_api_checks_it(toy: Backend) -> None:
    with Checker(CheckSettings(workers=1)) as checker:
        outcomes = checker.check(
            [(problem("toy", "1 + 1 = 2"), "compute"), (problem("toy-arith", "1 + 1 = 3"), "x")]
        )
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.ERROR]


def test_validate_uses_its_probe(bench: Path, tmp_path: Path) -> None:
    assert main(["validate", str(bench), "--out", str(tmp_path / "v")]) == 0
    valid = (tmp_path / "v" / "valid.txt").read_text().split()
    assert sorted(valid) == ["false_sum", "true_sum"]


def test_a_prover_without_states_says_so(toy: Backend) -> None:
    with pytest.raises(InputError, match="no proof states for prover 'toy'"):
        registry.state_opener("toy", CheckSettings())


def test_a_known_prover_without_a_checker_says_why() -> None:
    assert "no Lean 4 toolchain" in (registry.check_error("lean") or "")
    assert registry.canonical("lean") == "lean4"


def test_rocq_is_coq_wherever_a_prover_is_named(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"id": "t", "prover": "rocq", "statement": "Theorem t : True."}))
    assert [p.prover for p in load_benchmark(path).problems] == ["coq"]
    assert problem("rocq", "Theorem t : True.").prover == "coq"


def test_an_answer_with_no_proof_is_one_status_on_every_prover(toy: Backend) -> None:
    """Nothing left after extraction (an empty reply, an empty block, a Coq reply that
    only restates the theorem) is FAIL at `extract` for every prover, before any prover
    runs (no prover starts in this test)."""
    items = [
        (problem("toy", "1 + 1 = 2"), "```toy\n```"),
        (problem("hol-light", "`!n. n + 0 = n`"), "Here:\n```ocaml\n\n```"),
        (problem("coq", "Theorem t : True."), "```coq\nTheorem t : True.\n```"),
        (problem("coq", "Theorem t : True."), ""),
    ]
    with Checker(CheckSettings(workers=1)) as checker:
        outcomes = checker.check(items, extract=True)
    assert {(o.verdict, o.stage) for o in outcomes} == {(Verdict.FAIL, Stage.EXTRACT)}
    assert all("no proof in the answer" in o.message for o in outcomes)
