"""The automatic baselines papers print beside models: for each prover and method, the
tactics tried on every problem, in order, each as one attempt with its own time budget.

A new prover adds a row to TACTICS (and the way its answers wrap a tactic to SCRIPTS),
not code. A method a prover lacks is named in UNAVAILABLE with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from proofeval.errors import InputError
from proofeval.model import Attempt, Problem

METHODS = ("portfolio", "hammer")

_HOL_LIGHT = (
    "ARITH_TAC",
    "INT_ARITH_TAC",
    "REAL_ARITH_TAC",
    "MESON_TAC[]",
    "SET_TAC[]",
    "WORD_ARITH_TAC",
    "WORD_BITWISE_TAC",
)
_COQ = ("lia", "nia", "lra", "nra", "firstorder", "intuition", "auto", "easy", "congruence")

TACTICS: dict[tuple[str, str], tuple[str, ...]] = {
    ("hol-light", "portfolio"): (
        *_HOL_LIGHT,
        *(f"REPEAT STRIP_TAC THEN {tactic}" for tactic in _HOL_LIGHT),
    ),
    ("coq", "portfolio"): (*_COQ, "sauto"),
    ("coq", "hammer"): ("hammer", "sauto"),
}

# What a method needs loaded before each problem's header: the method's tools, which an
# answer may not load itself (CoqHammer's hammer and sauto live in the Hammer library;
# lia, nia, lra and nra in Lia, Lra and Psatz).
_HAMMER = "From Hammer Require Import Hammer."
TOOLS: dict[tuple[str, str], str] = {
    ("coq", "portfolio"): f"From Coq Require Import Lia Lra Psatz.\n{_HAMMER}",
    ("coq", "hammer"): _HAMMER,
}

# How an answer of each prover states one tactic ("{}" is the tactic).
SCRIPTS: dict[str, str] = {"hol-light": "{}", "coq": "Proof. {}. Qed."}

UNAVAILABLE: dict[tuple[str, str], str] = {
    ("hol-light", "hammer"): "HOL Light has no hammer in Debian (HOL(y)Hammer is not "
    "packaged); use --method portfolio",
}


@dataclass(frozen=True)
class Tactic:
    """One entry of a portfolio: its name (as reports show it) and the answer that runs it."""

    name: str
    answer: str


def portfolio(prover: str, method: str) -> tuple[Tactic, ...]:
    """The tactics `method` tries on a `prover` problem, in order; InputError if none."""
    if method not in METHODS:
        raise InputError(f"unknown baseline method {method!r} (methods: {', '.join(METHODS)})")
    if (prover, method) in UNAVAILABLE:
        raise InputError(UNAVAILABLE[prover, method])
    if (prover, method) not in TACTICS:
        provers = sorted({p for p, m in TACTICS if m == method})
        raise InputError(
            f"no {method} baseline for prover {prover!r} (it has one for: {', '.join(provers)})"
        )
    script = SCRIPTS[prover]
    return tuple(Tactic(name, script.format(name)) for name in TACTICS[prover, method])


def attempts(problem: Problem, method: str) -> list[Attempt]:
    """One attempt per tactic of the portfolio, indexed by its position."""
    return [
        Attempt(problem.id, index, tactic.answer, tactic.answer)
        for index, tactic in enumerate(portfolio(problem.prover, method))
    ]


def with_tools(problem: Problem, method: str) -> Problem:
    """`problem` with the tools `method` needs loaded before its header."""
    tools = TOOLS.get((problem.prover, method))
    return problem if tools is None else replace(problem, header=f"{tools}\n{problem.header}")
