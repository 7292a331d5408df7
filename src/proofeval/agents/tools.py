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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from proofeval.checking.checker import FENCE_HINT
from proofeval.errors import CheckerError, InputError
from proofeval.model import Outcome, Problem, Verdict
from proofeval.scale.api import Checker
from proofeval.scale.service.schema import search_reply, state_reply, verdict_reply
from proofeval.states import Budget, Feedback, StateSession
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
        """`fn`, with each call and its result (or its InputError or CheckerError,
        re-raised: a call the tool refuses, such as an unknown problem or a spent budget,
        or a prover process that failed) appended to the log."""

        def call(**arguments: Any) -> Any:
            started = time.time()
            try:
                result = fn(**arguments)
            except (InputError, CheckerError) as exc:
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

    def list_problems(self, category: str = "") -> dict:
        found = [
            {"id": p.id, "category": p.category, "prover": p.prover}
            for p in self.problems.values()
            if not category or p.category == category
        ]
        return {"problems": found}

    def read_problem(self, problem_id: str) -> dict:
        p = self._problem(problem_id)
        return {"id": p.id, "prover": p.prover, "category": p.category, "header": p.header,
                "statement": p.statement}  # fmt: skip

    def check(self, problem_id: str, proof: str) -> dict:
        p = self._problem(problem_id)
        self._count_check()
        [outcome] = self.checker.check([(p, self._text("proof", proof))], self._timeout(p))
        return verdict_reply(unfenced(outcome), self._feedback(p, proof, outcome))

    def start_state(self, problem_id: str) -> dict:
        return state_reply(self.session.start(self._problem(problem_id)))

    def apply_tactic(self, state_id: str, tactic: str) -> dict:
        return state_reply(self.session.apply(state_id, self._text("tactic", tactic)))

    def release_state(self, state_id: str) -> dict:
        self.session.release(state_id)
        return {"released": state_id}

    def search_theorems(self, problem_id: str, pattern: str, limit: int = 20) -> dict:
        found = self.session.search_theorems(
            self._problem(problem_id), self._text("pattern", pattern), limit
        )
        return search_reply(found)

    def submit(self, problem_id: str, proof: str = "", state_id: str = "") -> dict:
        """The final answer: a proof, or a state whose path is assembled into one; the
        ordinary checker's verdict, kept in the run's store."""
        p = self._problem(problem_id)
        proof, outcome, feedback = self.final(p, proof, state_id)
        index = keep(self.store, p.id, proof, outcome, feedback)
        return verdict_reply(unfenced(outcome), feedback) | {"proof": proof, "attempt": index}

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


def unfenced(outcome: Outcome) -> Outcome:
    """`outcome` with the checker's fence hint said for these tools: they take a proof
    alone (no `extract` argument), so the hint says to send it without its fence."""
    if outcome.message.startswith(FENCE_HINT):
        rest = outcome.message[len(FENCE_HINT) :]
        return replace(outcome, message=TOOL_FENCE_HINT + rest)
    return outcome


TOOL_FENCE_HINT = (
    "the proof still holds a ``` fence, as a model's raw output does: send the proof "
    "alone, without the fence and the text around it; "
)


DESCRIPTIONS = {
    "list_problems": "List the benchmark's problems (id, category, prover); optionally one "
    "category's.",
    "read_problem": "A problem's context (header) and the statement to prove.",
    "check": "Check a whole proof of a problem with the real prover: verdict OK, FAIL, "
    "CHEATING, TIMEOUT or ERROR, and the prover's message; a FAIL also gives feedback: the "
    "goals left, or the step that failed and its goals. HOL Light: one tactic expression; "
    "Coq: the proof's sentences.",
    "start_state": "Start an interactive proof state of a problem: its goals as the prover "
    "prints them, and an id for apply_tactic. Waits while the problem's context loads.",
    "apply_tactic": "Apply a tactic to a state (HOL Light: to its first goal; Coq: the next "
    "sentences): a new state with its goals; or, with `error`, the prover's refusal and the "
    "state it was applied to, unchanged. States branch: apply different tactics to one "
    "state.",
    "release_state": "Release a state no longer needed (states count against a budget).",
    "search_theorems": "Search the problem's context for theorems matching a pattern "
    "(HOL Light: a term such as `x + 0`, Coq: a Search pattern such as (_ + 0 = _)): each "
    "theorem's name and statement, at most `limit` (up to 200), and whether more matched.",
    "submit": "Submit the final proof of a problem, as text or as a state_id whose steps are "
    "assembled into one proof; the ordinary checker's verdict counts and is recorded.",
}
