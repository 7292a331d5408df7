"""miniF2F-rocq (../shared/data/minif2f-rocq): the loader reads every statement, and
each one that Debian's Coq 8.16 can state type-checks under the checker."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest

from proofeval.loaders import minif2f_rocq
from proofeval.model import Attempt, Outcome, Stage, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.interface import CheckSettings, Job
from tests.conftest import shared_data

pytestmark = pytest.mark.coq

# Statements Coq 8.16 with Debian 12's libraries cannot state (checked by hand): Debian
# 12's Coquelicot 3.2 has no `^` on complex numbers (it falls back to R's pow).
# These name Rocq 9's standard library (`From Stdlib`): the compatibility layer serves them.
STDLIB_PREFIX = {"algebra_apbmpcneq0_aeq0anbeq0anceq0", "amc12a_2021_p18"}
COMPLEX_POWER = {
    "algebra_2complexrootspoly_xsqp49eqxp7itxpn7i", "algebra_2rootsintpoly_am10tap11eqasqpam110",
    "algebra_2rootspoly_apatapbeq2asqp2ab",
    "algebra_3rootspoly_amdtamctambeqnasqmbpctapcbtdpasqmbpctapcbta",
    "algebra_manipexpr_2erprsqpesqeqnrpnesq", "amc12_2000_p15", "amc12a_2009_p15",
    "amc12a_2019_p21", "amc12a_2020_p15", "amc12a_2021_p12", "mathd_algebra_302",
}  # fmt: skip


def host_coq() -> tuple[int, ...]:
    done = subprocess.run(["coqc", "-print-version"], capture_output=True, text=True)
    return tuple(int(n) for n in done.stdout.split()[0].split(".")[:2])


def test_loader_reads_all_488_statements() -> None:
    problems = minif2f_rocq.load(shared_data("minif2f-rocq"), "minif2f-rocq")
    assert len(problems) == 488 and len({p.id for p in problems}) == 488
    assert Counter(p.category for p in problems) == {"test": 244, "valid": 244}
    assert all(p.prover == "coq" and p.statement.endswith(".") for p in problems)
    first = next(p for p in problems if p.id == "aime_1983_p1")
    assert first.header.startswith("Require Import Coq.Reals.Reals.")
    assert first.statement.startswith("Theorem aime_1983_p1 :")
    assert "Admitted" not in first.statement + first.header


def test_one_split_directory_loads_alone() -> None:
    problems = minif2f_rocq.load(shared_data("minif2f-rocq", "valid"), "v")
    assert len(problems) == 244 and {p.category for p in problems} == {"valid"}


@pytest.mark.skipif(shutil.which("coqtop") is None, reason="Coq is not installed")
def test_every_statement_type_checks() -> None:
    """Admitted as the answer: CHEATING at precheck means the statement type-checked
    first (an unusable statement is an ERROR before the answer is looked at)."""
    problems = minif2f_rocq.load(shared_data("minif2f-rocq"), "minif2f-rocq")
    got: dict[str, Outcome] = {}
    jobs = [Job(Attempt(p.id, 0, "Admitted.", "Admitted."), p, 60) for p in problems]
    CoqChecker(CheckSettings(workers=2), lambda a, o: got.__setitem__(a.problem_id, o)).run(jobs)
    unusable = {pid for pid, o in got.items() if o.verdict is not Verdict.CHEATING}
    # Debian 13's Coq 8.20 comes with Coquelicot 3.4, which has `^` on C: all 488 state.
    assert unusable == (COMPLEX_POWER if host_coq() < (8, 20) else set())
    assert all(got[p].stage is Stage.PRECHECK for p in unusable)
    assert all(got[p].verdict is Verdict.CHEATING for p in STDLIB_PREFIX)
    assert all('has type "C"' in got[p].message for p in unusable)
