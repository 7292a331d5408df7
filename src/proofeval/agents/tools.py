"""The tools an agent gets over one benchmark (`proofeval mcp`, `run --agent`): list and
read problems, check a proof, proof states (start, apply, release), search the context's
theorems, and submit. Every call and its result is appended to RUN_DIR/mcp-calls.jsonl;
submitted proofs are attempts in RUN_DIR's store (the ordinary checker's verdict), so
`proofeval report RUN_DIR` reports them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofeval.errors import InputError
from proofeval.model import Outcome, Problem, Verdict
from proofeval.scale.api import Checker
from proofeval.states import Budget, Feedback, StateSession, StepError
from proofeval.states.session import keep
from proofeval.store import RunStore

CALL_LOG = "mcp-calls.jsonl"
TEXT_LIMIT = 20000  # characters of any one text an agent sends (a proof, a tactic)


@dataclass(frozen=True)
class Limits:
    """Bounds on what an agent may spend: `checks` (check and submit calls), the states'
    budget, `timeout` seconds per check."""

    checks: int = 200
    timeout: float = 60.0
    budget: Budget = Budget()


class Tools:
    """The tools' behaviour, without MCP (tests call it directly too)."""

    def __init__(
        self,
        problems: list[Problem],
        checker: Checker,
        session: StateSession,
        run_dir: Path,
        limits: Limits,
    ) -> None:
        self.problems = {p.id: p for p in problems}
        self.checker = checker
        self.session = session
        self.limits = limits
        self.store = RunStore(run_dir)
        self.store.add_problems(problems)
        self.checks = 0
        self._log = (run_dir / CALL_LOG).open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def logged(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, with each call and its result (or its InputError, re-raised: a call the
        tool refuses, such as an unknown problem or a spent budget) appended to the log."""

        def call(**arguments: Any) -> Any:
            started = time.time()
            try:
                result = fn(**arguments)
            except InputError as exc:
                self._record(started, name, arguments, {"error": str(exc)})
                raise
            self._record(started, name, arguments, result)
            return result

        return call

    def _record(self, started: float, name: str, arguments: dict, result: Any) -> None:
        entry = {"time": started, "seconds": round(time.time() - started, 3), "tool": name,
                 "arguments": arguments, "result": result}  # fmt: skip
        with self._lock:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def _problem(self, problem_id: str) -> Problem:
        found = self.problems.get(problem_id)
        if found is None:
            raise InputError(f"no problem {problem_id!r} in this benchmark")
        return found

    @staticmethod
    def _text(what: str, text: str) -> str:
        if len(text) > TEXT_LIMIT:
            raise InputError(f"{what}: at most {TEXT_LIMIT} characters")
        return text

    # --- the tools ---------------------------------------------------------------------

    def list_problems(self, category: str = "") -> list[dict]:
        return [
            {"id": p.id, "category": p.category, "prover": p.prover}
            for p in self.problems.values()
            if not category or p.category == category
        ]

    def read_problem(self, problem_id: str) -> dict:
        p = self._problem(problem_id)
        return {"id": p.id, "prover": p.prover, "category": p.category, "header": p.header,
                "statement": p.statement}  # fmt: skip

    def check(self, problem_id: str, proof: str) -> dict:
        p = self._problem(problem_id)
        self._count_check()
        [outcome] = self.checker.check([(p, self._text("proof", proof))], self._timeout(p))
        return verdict_reply(outcome, self._feedback(p, proof, outcome))

    def start_state(self, problem_id: str) -> dict:
        return self.session.start(self._problem(problem_id)).as_dict()

    def apply_tactic(self, state_id: str, tactic: str) -> dict:
        result = self.session.apply(state_id, self._text("tactic", tactic))
        if isinstance(result, StepError):
            return {"error": result.as_dict(), "goals": list(result.state.goals)}
        return result.as_dict()

    def release_state(self, state_id: str) -> dict:
        self.session.release(state_id)
        return {"released": state_id}

    def search_theorems(self, problem_id: str, pattern: str, limit: int = 20) -> dict:
        found = self.session.search(
            self._problem(problem_id), self._text("pattern", pattern), limit
        )
        if isinstance(found, StepError):
            return {"error": found.as_dict()}
        return {"theorems": found}

    def submit(self, problem_id: str, proof: str = "", state_id: str = "") -> dict:
        """The final answer: a proof, or a state whose path is assembled into one; the
        ordinary checker's verdict, kept in the run's store."""
        p = self._problem(problem_id)
        proof, outcome, feedback = self.final(p, proof, state_id)
        index = keep(self.store, p.id, proof, outcome, feedback)
        return verdict_reply(outcome, feedback) | {"proof": proof, "attempt": index}

    def final(self, p: Problem, proof: str, state_id: str) -> tuple[str, Outcome, Feedback | None]:
        """A submitted answer's proof (a state's path assembled), the ordinary checker's
        outcome and its feedback; counted as a check."""
        self._count_check()
        if state_id:
            if self.session.state(state_id).problem_id != p.id:
                raise InputError(f"state {state_id!r} is not a state of {p.id!r}")
            finished = self.session.finish(state_id, self._timeout(p))
            return finished.proof, finished.outcome, finished.feedback
        [outcome] = self.checker.check([(p, self._text("proof", proof))], self._timeout(p))
        return proof, outcome, self._feedback(p, proof, outcome)

    def _feedback(self, p: Problem, proof: str, outcome: Outcome) -> Feedback | None:
        """A FAIL's feedback, found through proof states while the budget allows."""
        if outcome.verdict is not Verdict.FAIL:
            return None
        try:
            return self.session.diagnose(p, proof)
        except InputError:  # the states' budget is spent: the verdict alone
            return None

    def _count_check(self) -> None:
        with self._lock:
            if self.checks >= self.limits.checks:
                raise InputError(f"the budget of {self.limits.checks} checks is spent")
            self.checks += 1

    def _timeout(self, p: Problem) -> float:
        return min(p.timeout or self.limits.timeout, self.limits.timeout)

    def close(self) -> None:
        self._log.close()
        self.store.close()


def verdict_reply(outcome: Outcome, feedback: Feedback | None = None) -> dict:
    shown = {"verdict": outcome.verdict.value, "stage": outcome.stage.value,
             "seconds": round(outcome.seconds, 3), "message": outcome.message}  # fmt: skip
    return shown | ({"feedback": feedback.as_dict()} if feedback is not None else {})


DESCRIPTIONS = {
    "list_problems": "List the benchmark's problems (id, category, prover); optionally one "
    "category's.",
    "read_problem": "A problem's context (header) and the statement to prove.",
    "check": "Check a whole proof of a problem with the real prover: verdict OK, FAIL, "
    "CHEATING, TIMEOUT or ERROR, and the prover's message; a FAIL also gives feedback: the "
    "goals left, or the step that failed and its goals. HOL Light: one tactic expression; "
    "Coq: the proof's sentences.",
    "start_state": "Start an interactive proof state of a problem: its goals as the prover "
    "prints them, and an id for apply_tactic.",
    "apply_tactic": "Apply a tactic to a state (HOL Light: to its first goal; Coq: the next "
    "sentences): a new state with its goals, or the prover's error (the state is "
    "unchanged). States branch: apply different tactics to one state.",
    "release_state": "Release a state no longer needed (states count against a budget).",
    "search_theorems": "Search the problem's context for theorems matching a pattern "
    "(HOL Light: a term such as `x + 0`, Coq: a Search pattern such as (_ + 0 = _)).",
    "submit": "Submit the final proof of a problem, as text or as a state_id whose steps are "
    "assembled into one proof; the ordinary checker's verdict counts and is recorded.",
}
