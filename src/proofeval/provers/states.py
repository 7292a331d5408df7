"""Proof states: what each prover's states offer, one problem at a time, and how a path
of steps becomes one proof for the ordinary checker.

A prover's `ProblemStates` lives in a process of its own, made for one session and one
problem; it names its states by the handles the session gives it, and nothing else can
reach them. Every tactic is checked as an answer is (the prover's answer language,
sandbox, limits), and a step never decides a verdict: a path is a claim, which the
ordinary checker decides once it is assembled (the backend's `assemble`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol

from proofeval.model import Outcome


@dataclass(frozen=True)
class StepLimits:
    """One step's limits: wall clock (seconds) and memory."""

    timeout: float
    memory_mb: int


KINDS = ("focused", "unfocused", "shelved", "given_up")


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis of a goal as the prover prints it: its name (Coq's identifier,
    HOL Light's label, "" when it has none), its type (HOL Light: the assumption's
    term) and, for a let-bound one (Coq's `x := b : T`), its body."""

    name: str
    type: str
    body: str | None = None

    def as_json(self) -> dict:
        shown: dict = {"name": self.name, "type": self.type}
        return shown if self.body is None else shown | {"body": self.body}


@dataclass(frozen=True)
class Goal:
    """One goal: its hypotheses and conclusion as the prover prints them; `kind`: where
    it stands (Coq: focused, unfocused on the bullet stack, shelved, given up; HOL Light:
    always focused, a tactic works on the first); `text`: the whole goal as the prover
    shows it (for prompts and feedback)."""

    hypotheses: tuple[Hypothesis, ...]
    conclusion: str
    kind: str = "focused"
    text: str = ""

    @property
    def id(self) -> str:
        """The same for the same hypotheses and conclusion, wherever the goal is."""
        canonical = json.dumps([[h.as_json() for h in self.hypotheses], self.conclusion])
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def as_json(self) -> dict:
        return {"id": self.id, "kind": self.kind,
                "hypotheses": [h.as_json() for h in self.hypotheses],
                "conclusion": self.conclusion, "text": self.text}  # fmt: skip


@dataclass(frozen=True)
class Goals:
    """A state's goals (all of them: focused first) and the prover's messages about
    them apart from the goals (Coq's "This subproof is complete, but there are some
    unfocused goals..."); `complete` when no goal of any kind is left.
    `made`: how many goals the step's tactic made of the goal it worked on (HOL Light;
    -1 where the prover does not say). `seconds`: what the step cost (CPU seconds on
    the prover's processes: HOL Light's confined child, coqtop)."""

    items: tuple[Goal, ...]
    messages: tuple[str, ...] = ()
    made: int = -1
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.items

    @property
    def texts(self) -> tuple[str, ...]:
        """Each goal as the prover shows it: what prompts and feedback print."""
        return tuple(g.text for g in self.items)

    def as_json(self) -> dict:
        """The one JSON shape of a state's goals, for every surface (docs/states.md)."""
        return {"goals": [g.as_json() for g in self.items], "messages": list(self.messages),
                "complete": self.complete}  # fmt: skip


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
