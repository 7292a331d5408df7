"""The automatic baselines papers print beside models: for each prover and method, the
tactics tried on every problem, in order, each as one attempt with its own time budget.

A new prover adds a row to TACTICS (and the way its answers wrap a tactic to SCRIPTS),
not code. A method a prover lacks is named in UNAVAILABLE with the reason.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

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

# CoqHammer's own budgets (its defaults, `Set Hammer ATPLimit` / `ReconstrLimit`), and the
# seconds coqtop needs around them: the default budget of the hammer tactic is their sum, so
# that the wall clock never cuts CoqHammer before its own limits do.
HAMMER_ATP_LIMIT = 20
HAMMER_RECONSTR_LIMIT = 5
HAMMER_SLACK = 5
DEFAULT_TIMEOUT = 10.0  # seconds per tactic of other methods
METHOD_TIMEOUT: dict[tuple[str, str], float] = {
    ("coq", "hammer"): float(HAMMER_ATP_LIMIT + HAMMER_RECONSTR_LIMIT + HAMMER_SLACK),
}
# The ATPs CoqHammer calls, by the program it runs (in the checker's PATH).
HAMMER_ATPS = {"E": "eprover", "CVC4": "cvc4", "Z3": "z3_tptp", "Vampire": "vampire"}
CHECKER_PATH = "/usr/libexec/coq-hammer:/usr/bin:/bin"


def default_timeout(prover: str, method: str) -> float:
    """Each tactic's wall-clock budget when none is given."""
    return METHOD_TIMEOUT.get((prover, method), DEFAULT_TIMEOUT)


def hammer_atps(root: Path = Path("/")) -> tuple[list[str], list[str]]:
    """(the ATPs CoqHammer finds in the system at `root`, those it does not): a toolchain's
    checker sees its root's /usr, not the host's."""
    path = os.pathsep.join(str(root / d.lstrip("/")) for d in CHECKER_PATH.split(":"))
    found = {n: shutil.which(p, path=path) is not None for n, p in HAMMER_ATPS.items()}
    return [n for n, ok in found.items() if ok], [n for n, ok in found.items() if not ok]


def hammer_limit(problem_timeout: float) -> str:
    """The header line that gives CoqHammer's ATPs the paper's per-problem budget, less
    reconstruction and coqtop's own time."""
    atp = max(1, int(problem_timeout) - HAMMER_RECONSTR_LIMIT - HAMMER_SLACK)
    return f"Set Hammer ATPLimit {atp}."


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


def with_tools(problem: Problem, method: str, problem_timeout: float | None = None) -> Problem:
    """`problem` with the tools `method` needs loaded before its header (for the hammer
    with a per-problem budget, the ATPs' limit raised to it)."""
    tools = TOOLS.get((problem.prover, method))
    if tools is None:
        return problem
    if problem_timeout is not None and (problem.prover, method) == ("coq", "hammer"):
        tools += "\n" + hammer_limit(problem_timeout)
    return replace(problem, header=f"{tools}\n{problem.header}")
