"""Feedback a model can repair from: with a FAIL, the goals left unsolved (or those at
the step that failed) and which step failed, bounded in size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proofeval.model import Attempt, Outcome, Verdict

if TYPE_CHECKING:
    from proofeval.store import RunStore

GOALS_LIMIT = 8000  # characters of goals in one feedback, all goals together
MAX_GOALS = 10


@dataclass(frozen=True)
class Feedback:
    """`goals`: the goals left (after the whole proof, or before the step that failed),
    as the prover prints them, at most MAX_GOALS and GOALS_LIMIT characters; `more`: how
    many were left out; `step`: the index (from 0) of the step that failed, None when
    every step ran; `tactic`: that step's text; `message`: the prover's error."""

    goals: tuple[str, ...]
    more: int = 0
    step: int | None = None
    tactic: str = ""
    message: str = ""

    def as_dict(self) -> dict:
        return {"goals": list(self.goals), "more_goals": self.more, "failed_step": self.step,
                "failed_tactic": self.tactic, "message": self.message}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict) -> Feedback:
        return cls(tuple(data["goals"]), data["more_goals"], data["failed_step"],
                   data["failed_tactic"], data["message"])  # fmt: skip


def attempt_feedback(store: RunStore, attempt: Attempt) -> Feedback | None:
    """The feedback kept in `store` with `attempt`'s exact proof text (a FAIL checked with
    feedback on, or finished through states); None when there is none. What a repair
    loop reads to prompt for the next attempt."""
    kept = store.feedback(attempt)
    return None if kept is None else Feedback.from_dict(kept)


def bounded(goals: Sequence[str], limit: int = GOALS_LIMIT) -> tuple[tuple[str, ...], int]:
    """The goals that fit in `limit` characters (a goal cut short ends in "..."), and
    how many did not fit at all."""
    kept: list[str] = []
    left = limit
    for goal in goals[:MAX_GOALS]:
        if left <= 0:
            break
        kept.append(goal if len(goal) <= left else goal[: max(0, left - 3)] + "...")
        left -= len(goal)
    return tuple(kept), len(goals) - len(kept)


def feedback_of(outcome: Outcome, left: Sequence[str]) -> Feedback | None:
    """The feedback on finishing a path whose last state has the goals `left`: every step
    ran, so a FAIL is about those goals (none, when the checker disagrees with the states)."""
    if outcome.verdict is not Verdict.FAIL:
        return None
    goals, more = bounded(left)
    return Feedback(goals, more, None, "", outcome.message)


def step_feedback(goals: Sequence[str], step: int, tactic: str, message: str) -> Feedback:
    """The feedback of a step that failed: the goals it was applied to."""
    kept, more = bounded(goals)
    return Feedback(kept, more, step, tactic[:2000], message)
