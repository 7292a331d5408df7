"""A session of proof states: what a search loop, a repair loop or an agent holds.

    session = StateSession(opener, checker, Budget(steps=200, seconds=60, live=100))
    root = session.start(problem)                  # State: its goals as the prover prints them
    step = session.apply(root, "INDUCT_TAC")       # a new State, or a StepError (root unchanged)
    other = session.apply(root, "ARITH_TAC")       # branching: any state, any number of times
    finished = session.finish(step)                # the path checked as one proof: a verdict
    session.release(other); session.close()

States are named by random ids that only this session knows; each problem's states
live in a process of this session's own (provers/states.py), so no call can reach
another session's states. Every step counts against the budget (steps, seconds, live
states); a step beyond it raises BudgetExceeded before any prover sees it."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from proofeval.errors import CheckerError, InputError
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import StateOpener
from proofeval.provers.states import (
    Goals,
    ProblemStates,
    Refused,
    Step,
    StepLimits,
)
from proofeval.states.feedback import Feedback, bounded, feedback_of, step_feedback
from proofeval.states.search import MAX_RESULTS, Found, found
from proofeval.store import RunStore


class BudgetExceeded(InputError):
    """The session's budget does not allow this call."""


class UnknownState(InputError):
    """No state of this session has that id (released, or never this session's)."""


@dataclass(frozen=True)
class Budget:
    """What one session may spend: `steps` tactics applied (and searches), `seconds` of
    their CPU time (the prover processes'; a step that times out is charged its
    whole limit), `live` states held at once;
    `step_timeout`: the wall clock of one step; `memory_mb`: its memory."""

    steps: int = 1000
    seconds: float = 600.0
    live: int = 1000
    step_timeout: float = 30.0
    memory_mb: int = 4096


@dataclass(frozen=True)
class State:
    """One proof state: its goals (with their hypotheses, and the prover's messages),
    and the path of steps from the problem's statement."""

    id: str
    problem_id: str
    proof: Goals
    path: tuple[Step, ...] = ()

    @property
    def goals(self) -> tuple[str, ...]:
        """Each goal as the prover shows it (prompts, feedback)."""
        return self.proof.texts

    @property
    def solved(self) -> bool:
        return self.proof.complete

    def as_dict(self) -> dict:
        """The state's JSON (docs/states.md): `goals` as texts and `solved`, as before,
        and `proof_state`, the goals with their hypotheses (Goals.as_json): not `proof`,
        which a finished path's reply gives as its text."""
        return {"id": self.id, "problem_id": self.problem_id, "goals": list(self.goals),
                "solved": self.solved, "steps": [s.tactic for s in self.path],
                "proof_state": self.proof.as_json()}  # fmt: skip


@dataclass(frozen=True)
class StepError:
    """A tactic the prover (or the answer language) refused; `state` is unchanged."""

    state: State
    tactic: str
    outcome: Outcome

    def as_dict(self) -> dict:
        o = self.outcome
        return {"state": self.state.id, "tactic": self.tactic, "verdict": o.verdict.value,
                "stage": o.stage.value, "message": o.message}  # fmt: skip


@dataclass(frozen=True)
class Finished:
    """The ordinary checker's verdict on a state's whole path, and what it checked."""

    state: State
    proof: str
    outcome: Outcome
    feedback: Feedback | None


@dataclass
class Usage:
    steps: int = 0
    seconds: float = 0.0
    live: int = 0


class Checking(Protocol):
    """What finish needs: proofeval.Checker's check."""

    def check(
        self, items: Iterable[tuple[Problem, str]], timeout: float | None = None
    ) -> list[Outcome]: ...


@dataclass
class _Problem:
    problem: Problem
    states: ProblemStates
    held: dict[str, State] = field(default_factory=dict)


class StateSession:
    """Proof states of any number of problems, under one budget (see the module)."""

    def __init__(
        self,
        openers: Callable[[str], StateOpener],
        checker: Checking | None,
        budget: Budget | None = None,
        store: RunStore | None = None,
    ) -> None:
        """`openers(prover)`: that prover's states; `checker` decides finish's verdicts
        (None: a session that only explains, whose finish is refused); `store`: where
        they are kept as attempts (None: not kept)."""
        self.budget = budget or Budget()
        self.usage = Usage()
        self._openers = openers
        self._checker = checker
        self._store = store
        self._problems: dict[str, _Problem] = {}
        self._owner: dict[str, _Problem] = {}
        self._lock = threading.RLock()
        self._closed = False

    # --- the calls -------------------------------------------------------------------

    def start(self, problem: Problem) -> State:
        """The state of `problem`'s statement, before any tactic."""
        with self._lock:
            self._admit_state()
            entry = self._entry(problem)
            handle = self._new_id()
            goals = entry.states.start(handle)
            return self._hold(entry, handle, goals, ())

    def apply(
        self, state: State | str, tactic: str, timeout: float | None = None
    ) -> State | StepError:
        """`tactic` on `state`'s first goal (HOL Light) or as the next sentences (Coq):
        the new state, or the prover's error with `state` unchanged."""
        with self._lock:
            entry, held = self._find(state)
            self._admit_step()
            self._admit_state()
            handle = self._new_id()
            limits = self._limits(timeout)
            try:
                result = entry.states.apply(held.id, handle, tactic, limits)
            except CheckerError as exc:
                result = Refused(
                    Outcome(Verdict.ERROR, Stage.CHECK, 0.0, f"checker failure: {exc}")
                )
            self._spend(_charged(result, limits))
            if isinstance(result, Refused):
                return StepError(held, tactic, result.outcome)
            return self._hold(entry, handle, result, (*held.path, Step(tactic, result.made)))

    def search(self, problem: Problem, pattern: str, limit: int = 20) -> list[str] | StepError:
        """At most `limit` theorems of `problem`'s context matching `pattern` (HOL Light's
        `search` of a term, Coq's `Search`), as the prover prints them; it counts as a
        step, within the step's wall clock."""
        return self._search(problem, pattern, max(1, min(limit, MAX_RESULTS)))

    def search_theorems(self, problem: Problem, pattern: str, limit: int = 20) -> Found | StepError:
        """search's results structured (states/search.py): at most `limit` theorems,
        each its name and statement, and whether more matched."""
        limit = max(1, min(limit, MAX_RESULTS))
        hits = self._search(problem, pattern, limit + 1)
        return hits if isinstance(hits, StepError) else found(hits, limit)

    def _search(self, problem: Problem, pattern: str, limit: int) -> list[str] | StepError:
        with self._lock:
            self._admit_step()
            entry = self._entry(problem)
            limits = self._limits(None)
            hits = entry.states.search(pattern, limit, limits)
            if isinstance(hits, Refused):
                self._spend(_charged(hits, limits))
                root = next(iter(entry.held.values()), State("", problem.id, Goals(())))
                return StepError(root, pattern, hits.outcome)
            return hits

    def release(self, state: State | str) -> None:
        with self._lock:
            entry, held = self._find(state)
            del entry.held[held.id]
            del self._owner[held.id]
            self.usage.live -= 1
            entry.states.release(held.id)

    def finish(self, state: State | str, timeout: float | None = None) -> Finished:
        """The whole proof of `state`'s path, checked by the ordinary checker: only this
        verdict counts. Kept in the store as the problem's next attempt."""
        if self._checker is None:
            raise InputError("this session has no checker: finish is not available")
        with self._lock:
            entry, held = self._find(state)
        proof = registry.backend(entry.problem.prover).assemble(held.path)
        [outcome] = self._checker.check([(entry.problem, proof)], timeout)
        feedback = feedback_of(outcome, held.goals)
        if self._store is not None:
            self._keep(entry.problem, proof, outcome, feedback)
        return Finished(held, proof, outcome, feedback)

    def diagnose(self, problem: Problem, proof: str) -> Feedback:
        """Where `proof` stands, for a model to repair it, found through states (its steps
        count against the budget): the goals it leaves, or those at the step that
        failed, and which step that was. HOL Light: the whole tactic is one step; Coq:
        each sentence is one."""
        root = current = self.start(problem)
        try:
            for i, tactic in enumerate(registry.backend(problem.prover).steps(proof)):
                result = self.apply(current, tactic)
                if isinstance(result, StepError):
                    message = result.outcome.message
                    return step_feedback(current.goals, i, tactic, message)
                if current is not root:
                    self.release(current)
                current = result
            goals, more = bounded(current.goals)
            return Feedback(goals, more, None, "", "" if current.solved else "goals are left")
        finally:
            for held in {root.id, current.id}:
                self.release(held)

    def state(self, state_id: str) -> State:
        with self._lock:
            return self._find(state_id)[1]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for entry in self._problems.values():
                entry.states.close()
            self._problems.clear()
            self._owner.clear()
            self.usage.live = 0

    def __enter__(self) -> StateSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- the budget ------------------------------------------------------------------

    def _admit_step(self) -> None:
        if self.usage.steps >= self.budget.steps:
            raise BudgetExceeded(f"the session's budget of {self.budget.steps} steps is spent")
        if self.usage.seconds >= self.budget.seconds:
            raise BudgetExceeded(
                f"the session's budget of {self.budget.seconds:g} seconds is spent"
            )
        self.usage.steps += 1

    def _admit_state(self) -> None:
        if self._closed:
            raise InputError("this session is closed")
        if self.usage.live >= self.budget.live:
            raise BudgetExceeded(
                f"the session holds {self.budget.live} states, its budget: release some"
            )

    def _limits(self, timeout: float | None) -> StepLimits:
        left = self.budget.seconds - self.usage.seconds
        wanted = timeout if timeout is not None else self.budget.step_timeout
        return StepLimits(
            max(0.1, min(wanted, self.budget.step_timeout, left)), self.budget.memory_mb
        )

    def _spend(self, seconds: float) -> None:
        self.usage.seconds += max(0.0, seconds)

    # --- bookkeeping -----------------------------------------------------------------

    def _entry(self, problem: Problem) -> _Problem:
        if self._closed:
            raise InputError("this session is closed")
        known = self._problems.get(problem.id)
        if known is not None and known.problem == problem:
            return known
        if known is not None:
            raise InputError(f"problem id {problem.id!r} names two different problems")
        states = self._openers(problem.prover).open(problem)
        entry = self._problems[problem.id] = _Problem(problem, states)
        return entry

    def _hold(self, entry: _Problem, handle: str, goals: Goals, path: tuple[Step, ...]) -> State:
        state = State(handle, entry.problem.id, goals, path)
        entry.held[handle] = state
        self._owner[handle] = entry
        self.usage.live += 1
        return state

    def _find(self, state: State | str) -> tuple[_Problem, State]:
        handle = state if isinstance(state, str) else state.id
        entry = self._owner.get(handle)
        if entry is None:
            raise UnknownState(f"no state {handle!r} in this session")
        return entry, entry.held[handle]

    @staticmethod
    def _new_id() -> str:
        return secrets.token_hex(12)

    def _keep(
        self, problem: Problem, proof: str, outcome: Outcome, feedback: Feedback | None
    ) -> None:
        assert self._store is not None
        self._store.add_problems([problem])
        keep(self._store, problem.id, proof, outcome, feedback)


def _charged(result: Goals | Refused, limits: StepLimits) -> float:
    """What a step costs the budget: its seconds; a step that timed out, its whole limit
    (CPU time alone would undercharge a step that waited on a busy machine)."""
    if isinstance(result, Refused) and result.outcome.verdict is Verdict.TIMEOUT:
        return max(result.seconds, limits.timeout)
    return result.seconds


def keep(
    store: RunStore, problem_id: str, proof: str, outcome: Outcome, feedback: Feedback | None
) -> int:
    """Store `proof` as the problem's next attempt with its verdict (and a FAIL's
    feedback); the attempt's index."""
    index = sum(1 for a in store.attempts() if a.problem_id == problem_id)
    attempt = Attempt(problem_id, index, proof, proof)
    store.add_attempts([attempt])
    store.record(attempt, outcome)
    if feedback is not None:
        store.record_feedback(attempt, feedback.as_dict())
    return index
