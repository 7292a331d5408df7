"""The automatic baselines papers print beside models: for each prover and method, the
tactics tried on every problem, in order, each as one attempt with its own time budget.

Which tactics a prover's method tries, what they need loaded, and their budgets are the
prover's own (its backend's `baselines`); a new prover brings its rows with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from proofeval.errors import InputError
from proofeval.model import Attempt, Problem
from proofeval.provers import registry
from proofeval.provers.backend import Baseline

METHODS = ("portfolio", "hammer")
DEFAULT_TIMEOUT = Baseline(()).timeout  # seconds per tactic when a method names none


@dataclass(frozen=True)
class Tactic:
    """One entry of a portfolio: its name (as reports show it) and the answer that runs it."""

    name: str
    answer: str


def baseline(prover: str, method: str) -> Baseline:
    """`method` as `prover` runs it; InputError if it has none."""
    if method not in METHODS:
        raise InputError(f"unknown baseline method {method!r} (methods: {', '.join(METHODS)})")
    found = registry.backend(prover)
    if method in found.no_baseline:
        raise InputError(found.no_baseline[method])
    if method not in found.baselines:
        having = sorted(b.name for b in registry.BACKENDS.values() if method in b.baselines)
        raise InputError(
            f"no {method} baseline for prover {prover!r} (it has one for: {', '.join(having)})"
        )
    return found.baselines[method]


def portfolio(prover: str, method: str) -> tuple[Tactic, ...]:
    """The tactics `method` tries on a `prover` problem, in order; InputError if none."""
    script = registry.backend(prover).tactic
    return tuple(Tactic(name, script.format(name)) for name in baseline(prover, method).tactics)


def default_timeout(prover: str, method: str) -> float:
    """Each tactic's wall-clock budget when none is given."""
    return baseline(prover, method).timeout


def attempts(problem: Problem, method: str) -> list[Attempt]:
    """One attempt per tactic of the portfolio, indexed by its position."""
    return [
        Attempt(problem.id, index, tactic.answer, tactic.answer)
        for index, tactic in enumerate(portfolio(problem.prover, method))
    ]


def with_tools(problem: Problem, method: str, problem_timeout: float | None = None) -> Problem:
    """`problem` with the tools `method` needs loaded before its header (for a method with
    limits of its own and a per-problem budget, those limits raised to it)."""
    chosen = baseline(problem.prover, method)
    tools = chosen.tools
    if not tools:
        return problem
    if problem_timeout is not None and chosen.limit_line is not None:
        tools += "\n" + chosen.limit_line(problem_timeout)
    return replace(problem, header=f"{tools}\n{problem.header}")
