"""The hammer baseline at CoqHammer's own budgets, and at a paper's per-problem limit."""

from __future__ import annotations

import shutil
from pathlib import Path

from proofeval.baselines import tactics
from proofeval.baselines.run import BaselineOptions, budget
from proofeval.model import Problem
from proofeval.provers.coq import hammer

COQ = Problem("p", "Theorem p : True.", "coq", header="Require Import Arith.\n")


def opts(**given: float) -> BaselineOptions:
    return BaselineOptions(Path("bench"), Path("out"), "hammer", **given)  # type: ignore[arg-type]


def test_the_hammer_is_never_cut_before_its_own_limits() -> None:
    own = hammer.ATP_LIMIT + hammer.RECONSTR_LIMIT
    assert budget(opts(), COQ) > own  # 10 s per tactic timed out every hammer call
    portfolio = BaselineOptions(Path("b"), Path("o"), "portfolio")
    assert budget(portfolio, COQ) == tactics.DEFAULT_TIMEOUT
    assert budget(opts(tactic_timeout=7.0), COQ) == 7.0
    assert budget(opts(tactic_timeout=7.0, problem_timeout=600.0), COQ) == 600.0


def test_the_papers_limit_reaches_coqhammers_atps() -> None:
    plain = tactics.with_tools(COQ, "hammer")
    assert "ATPLimit" not in plain.header
    paper = tactics.with_tools(COQ, "hammer", 600.0)
    assert paper.header.startswith("From Hammer Require Import Hammer.\nSet Hammer ATPLimit 590.")
    assert paper.header.endswith(COQ.header) and paper.statement == COQ.statement


def test_the_atps_present_are_those_on_the_checkers_path() -> None:
    present, missing = hammer.atps()
    assert sorted(present + missing) == sorted(hammer.ATPS)
    for name, program in hammer.ATPS.items():
        on_path = shutil.which(program, path=hammer.CHECKER_PATH) is not None
        assert (name in present) == on_path
