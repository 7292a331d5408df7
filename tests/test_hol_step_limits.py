"""Every phase of a proof-state step, and of an attempt's parse and compile, within the
attempt's limit, whatever the text (HOL Light, both paths): a step with a 2 s limit
answers within 3 s.

The phases: the answer's parse, deny-check and compile (in the step's child on the
bytecode path, in the warm parser's fork on the native path), the tactic, printing
its goals or its error (in the child), and rebuilding the goals the child sends back
(in the session's own process, which no deadline can interrupt: its cost must be
bounded by the records' size). tests/test_hol_statements.py holds the step whose
type error prints forever.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from proofeval.api import Checker, problem
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.conftest import on_both_paths

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

TRUE_GOAL = "`!n. n + 0 = n`"
HONEST = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"
LIMIT, ANSWERED_WITHIN = 2.0, 3.0


def doubling_type(n: int) -> str:
    """An OCaml expression: the type T_n, T_0 = bool and T_k+1 = T_k -> T_k, built
    with sharing in n steps; printed, or compared without sharing, it has 2^n leaves."""
    return f"(let rec t k = if k = 0 then bool_ty else let a = t (k - 1) in mk_fun_ty a a in t {n})"


# Texts a step or an attempt may be given, each meant to make one phase take long.
TEXTS = {
    # a new goal `x = x` with x : T_n: printed as four words, made in microseconds, but
    # HOL Light compares such a type with `=`, which does not share: once in the child,
    # once more where its goals are rebuilt (the session's process); for some n the
    # child finishes just within the limit
    **{
        f"goal of a shared type {n}": (
            f'(fun g -> SUBGOAL_THEN (let x = mk_var ("x", {doubling_type(n)}) in'
            " mk_eq (x, x)) (K ALL_TAC) g)"
        )
        for n in range(20, 27)
    },
    # 20 MB of text
    "huge": "REWRITE_TAC[" + "ADD_CLAUSES; " * 1_500_000 + "ADD_CLAUSES]",
    # nested 200,000 deep: the parsers' and the deny-list's recursion
    "deep": "(" * 200_000 + "ALL_TAC" + ")" * 200_000,
    # a term quotation that HOL Light's parser takes long on, when the tactic runs
    "slow quotation": "(SUBGOAL_THEN `" + " + ".join(["x"] * 5000) + " = y` (K ALL_TAC))",
    # a type error whose type is exponential, in a long expression
    "type error": (
        "(let f0 x = (x, x) in let f1 x = f0 (f0 x) in let f2 x = f1 (f1 x) in"
        " let f3 x = f2 (f2 x) in let f4 x = f3 (f3 x) in f4 (f4 ALL_TAC) : tactic)"
        + " THEN ALL_TAC"
        * 100
    ),
}


@pytest.fixture(scope="module")
def session(hol_base: WarmProcess) -> Iterator[object]:
    from proofeval.scale.sessions import States

    checker = Checker(CheckSettings(workers=1), warm={"hol-light": hol_base})
    with checker, States(checker) as states, states.session() as session:
        yield session


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_step_answers_within_its_limit_whatever_its_text(session, name: str) -> None:
    root = session.start(problem("hol-light", TRUE_GOAL))
    started = time.monotonic()
    step = session.apply(root, TEXTS[name], timeout=LIMIT)
    spent = time.monotonic() - started
    assert spent < ANSWERED_WITHIN, (name, spent, step)
    # the session still serves: an honest step from the same state
    after = session.apply(root, HONEST, timeout=30.0)
    assert getattr(after, "solved", False), after


@pytest.fixture(scope="module")
def goal(core: WarmProcess) -> WarmProcess:
    assert core.add_goal("g", TRUE_GOAL) is None
    return core


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_an_attempt_answers_within_its_limit_whatever_its_text(
    goal: WarmProcess, name: str
) -> None:
    started = time.monotonic()
    out = goal.check("g", TEXTS[name], LIMIT, 4096)
    spent = time.monotonic() - started
    assert spent < ANSWERED_WITHIN, (name, spent, out)
    assert out.verdict != Verdict.OK, out
    assert goal.check("g", HONEST, 30.0, 4096).verdict == Verdict.OK


def test_a_statement_of_a_shared_type_is_bounded(goal: WarmProcess) -> None:
    """A statement whose type inference gives a type with 2^40 leaves, shared: its
    records are rebuilt in the process every problem of the context forks from."""
    chain = " /\\ ".join(f"x{k + 1} = (x{k}, x{k})" for k in range(40))
    started = time.monotonic()
    why = goal.add_goal("shared type", f"`{chain} /\\ x40 = x40`", (10.0, 4096))
    spent = time.monotonic() - started
    assert spent < 15.0, (spent, why)
    assert goal.check("g", HONEST, 30.0, 4096).verdict == Verdict.OK
