"""Feedback on a run's FAILs (`proofeval check --feedback on`): each FAIL's goals, found
through proof states after checking, kept in the run's store beside its verdict."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping

from tqdm import tqdm

from proofeval.errors import CheckerError, InputError
from proofeval.model import Attempt, Problem, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import SharedProcess, StateOpener
from proofeval.provers.interface import CheckSettings
from proofeval.states.session import Budget, StateSession
from proofeval.store import RunStore

Say = Callable[[str], None]


def unexplained(store: RunStore, problems: Mapping[str, Problem]) -> list[Attempt]:
    """The FAILs of `store` (on problems of `problems`) with no feedback yet."""
    return [
        a
        for a in store.attempts()
        if a.problem_id in problems
        and (o := store.outcome(a)) is not None
        and o.verdict is Verdict.FAIL
        and store.feedback(a) is None
    ]


def explain_failures(
    store: RunStore,
    problems: Mapping[str, Problem],
    settings: CheckSettings,
    warm: Mapping[str, SharedProcess],
    timeout_of: Callable[[Problem], float],
    say: Say,
) -> int:
    """Diagnose every FAIL of `store` without feedback and keep its feedback; how many
    were kept. One session per problem, each step limited as an attempt is (the
    problem's timeout, the settings' memory); `warm`: the provers' shared processes
    (HOL Light's core). A FAIL that cannot be explained keeps its verdict alone."""
    todo = unexplained(store, problems)
    if not todo:
        return 0
    openers: dict[str, StateOpener] = {}

    def opener(prover: str) -> StateOpener:
        if prover not in openers:
            openers[prover] = registry.state_opener(prover, settings, warm.get(prover))
        return openers[prover]

    kept = 0
    try:
        with tqdm(total=len(todo), unit="FAIL", desc="feedback", file=sys.stderr) as bar:
            for problem_id in dict.fromkeys(a.problem_id for a in todo):
                problem = problems[problem_id]
                mine = [a for a in todo if a.problem_id == problem_id]
                kept += _explain(store, problem, mine, opener, settings, timeout_of, say)
                bar.update(len(mine))
    finally:
        for made in openers.values():
            made.close()
    return kept


def _explain(
    store: RunStore,
    problem: Problem,
    attempts: list[Attempt],
    opener: Callable[[str], StateOpener],
    settings: CheckSettings,
    timeout_of: Callable[[Problem], float],
    say: Say,
) -> int:
    budget = Budget(step_timeout=timeout_of(problem), memory_mb=settings.memory_mb)
    kept = 0
    with StateSession(opener, None, budget) as session:
        for attempt in attempts:
            try:
                found = session.diagnose(problem, attempt.proof)
            except (InputError, CheckerError) as exc:  # no states, a spent budget, a death
                say(f"no feedback for {problem.id} attempt {attempt.index}: {exc}")
                continue
            store.record_feedback(attempt, found.as_dict())
            kept += 1
    return kept
