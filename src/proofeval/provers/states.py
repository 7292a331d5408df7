"""Proof states: what each prover's states offer, one problem at a time, and how a path
of steps becomes one proof for the ordinary checker.

A prover's `ProblemStates` lives in a process of its own, made for one session and one
problem; it names its states by the handles the session gives it, and nothing else can
reach them. Every tactic is checked as an answer is (the prover's answer language,
sandbox, limits), and a step never decides a verdict: a path is a claim, which the
ordinary checker decides once it is assembled (`assemble`)."""

from __future__ import annotations

from collections.abc import Sequence
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


def assemble(prover: str, steps: Sequence[Step]) -> str:
    """The whole proof a path stands for, as an answer to check."""
    if prover == "hol-light":
        return hol_light_proof(steps)
    return "\n".join(step.tactic.strip() for step in steps)


MAX_STEPS = 100  # a longer proof's last step is the rest of it


def proof_steps(prover: str, proof: str) -> list[str]:
    """A whole proof as steps: HOL Light's tactic is one; Coq's sentences one each
    (without Proof and the closing Qed or Defined, which finish adds)."""
    if prover != "coq":
        return [proof]
    from proofeval.provers.coq.sentences import SentenceError, split

    try:
        sentences = split(proof)
    except SentenceError:
        return [proof]  # the step's own check says why
    texts = [s.text + ("." if s.kind == "text" else "") for s in sentences]
    words = [s.code.strip() for s in sentences]
    if words[:1] == ["Proof"]:
        texts, words = texts[1:], words[1:]
    if words[-1:] and words[-1] in ("Qed", "Defined"):
        texts = texts[:-1]
    if len(texts) > MAX_STEPS:
        texts = [*texts[: MAX_STEPS - 1], " ".join(texts[MAX_STEPS - 1 :])]
    return texts


def hol_light_proof(steps: Sequence[Step]) -> str:
    """One tactic expression. Each step worked on the first goal left, as HOL Light's `e`
    does, so the path is the tree of goals in preorder: a step that made one goal is
    followed by THEN, several by THENL, one goal per branch; a goal the path left open
    gets ALL_TAC (and the checker says FAIL: unsolved goals)."""
    position = 0

    def tree() -> str:
        nonlocal position
        if position >= len(steps):
            return "ALL_TAC"
        step = steps[position]
        position += 1
        tactic = f"({step.tactic.strip()})"
        branches = [tree() for _ in range(max(step.made, 0))]
        if len(branches) == 1:
            return f"{tactic} THEN ({branches[0]})"
        if branches:
            return f"{tactic} THENL [{'; '.join(f'({b})' for b in branches)}]"
        return tactic

    return tree() if steps else "ALL_TAC"
