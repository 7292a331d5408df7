"""Proof states: what each prover's states offer, one problem at a time, and how a path
of steps becomes one proof for the ordinary checker.

A prover's `ProblemStates` lives in a process of its own, made for one session and one
problem; it names its states by the handles the session gives it, and nothing else can
reach them. Every tactic is checked as an answer is (the prover's answer language,
sandbox, limits), and a step never decides a verdict: a path is a claim, which the
ordinary checker decides once it is assembled (the backend's `assemble`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from proofeval.model import Outcome


@dataclass(frozen=True)
class StepLimits:
    """One step's limits: wall clock (seconds) and memory."""

    timeout: float
    memory_mb: int


@dataclass(frozen=True)
class Goals:
    """A state's goals as the prover prints them; `solved` when none is left.
    `made`: how many goals the step's tactic made of the goal it worked on (HOL Light;
    -1 where the prover does not say). `seconds`: what the step cost (CPU seconds on
    the prover's processes: HOL Light's confined child, coqtop)."""

    goals: tuple[str, ...]
    solved: bool
    made: int = -1
    seconds: float = 0.0


@dataclass(frozen=True)
class Refused:
    """The prover's refusal of a step, as an attempt's verdict (FAIL: the prover's
    error; CHEATING/ERROR at precheck: the answer language; TIMEOUT): the state stays
    as it was."""

    outcome: Outcome
    seconds: float = 0.0


class ProblemStates(Protocol):
    """The states of one problem for one session (see the module's docstring)."""

    def start(self, handle: str) -> Goals: ...

    def apply(self, parent: str, handle: str, tactic: str, limits: StepLimits) -> Goals | Refused:
        """`tactic` on `parent`'s state; the new state is named `handle`."""
        ...

    def release(self, handle: str) -> None: ...

    def search(self, pattern: str, limit: int, limits: StepLimits) -> list[str] | Refused:
        """At most `limit` theorems of the context that match `pattern`."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Step:
    """One step of a path: the tactic, and how many goals it made (see Goals.made)."""

    tactic: str
    made: int
