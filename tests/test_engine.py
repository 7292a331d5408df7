"""The engine starts a prover's shared process itself when no test gives one: HOL Light's
core then sees the problems' directories, so a header loads the development's files
(the real HOL Light, started by the engine as `proofeval check` starts it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofeval.checking.engine import check_all
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.interface import CheckSettings, Job

pytestmark = pytest.mark.hol


def test_the_engines_own_core_sees_the_problems_directories(tmp_path: Path) -> None:
    (tmp_path / "lemma.ml").write_text("let MY_LEMMA = prove(`1 + 1 = 2`, ARITH_TAC);;\n")
    header = 'loadt "lemma.ml";;\n'
    problem = Problem("p", "`1 + 1 = 2`", "hol-light", header=header, directory=str(tmp_path))
    proof = "ACCEPT_TAC MY_LEMMA"
    got: list[Outcome] = []
    job = Job(Attempt("p", 0, proof, proof), problem, 120.0)
    check_all([job], [problem], CheckSettings(workers=1), lambda _a, o: got.append(o))
    assert [o.verdict for o in got] == [Verdict.OK], got
