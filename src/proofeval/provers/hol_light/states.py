"""HOL Light's proof states: one warm process per session and problem, a fork of the
problem's context, that holds the session's states of that problem (its OCaml side is
ocaml/proofeval_states.ml and ocaml/proofeval_goals.ml).

Each tactic runs in a confined fork of that process, as an attempt runs (the deny-list,
the sandbox, the attempt's limits and its own wall clock); only the goals it leaves come
back, rebuilt through the kernel. Branching costs nothing: two tactics applied to one
state are two forks of the process that holds it."""

from __future__ import annotations

import math
import threading

from proofeval.errors import CheckerError
from proofeval.model import Outcome, Problem, Stage, Verdict
from proofeval.provers.hol_light.loaded import contexts_of
from proofeval.provers.hol_light.server import STATEMENT_LIMITS, WarmProcess
from proofeval.provers.states import Goal, Goals, Hypothesis, Refused, StepLimits

START_LIMIT = 600.0  # seconds to collapse a template's heap into huge pages


def _slack(limits: StepLimits) -> float:
    """How long to wait for a step's reply: its limit, with room for compiling it
    natively (bounded by its own CPU limit) and rebuilding its goals."""
    return 2 * limits.timeout + 120.0


class HolLightStateFactory:
    """Gives every session its own fork of its problem's context: the core's template of
    the header (loaded.py), loaded once and shared with the checker's workers."""

    def __init__(self, base: WarmProcess, memory_mb: int) -> None:
        """`memory_mb`: the templates' memory bound, the checker's (so that both share
        them); a step's memory is at most that."""
        self.base = base
        self.memory_mb = memory_mb
        self._templates: dict[tuple[str, str], WarmProcess] = {}
        self._lock = threading.Lock()

    def open(self, problem: Problem) -> HolLightStates:
        return HolLightStates(problem, self._template(problem).clone())

    def _template(self, problem: Problem) -> WarmProcess:
        key = (problem.header, problem.directory)
        with self._lock:
            if key not in self._templates:
                contexts = contexts_of(self.base)
                proc = contexts.acquire(self.base, *key, self.memory_mb)
                try:
                    _own_huge_pages(proc)
                except BaseException:
                    contexts.release(proc)
                    raise
                self._templates[key] = proc
            return self._templates[key]

    def close(self) -> None:
        with self._lock:
            for proc in self._templates.values():
                contexts_of(proc).release(proc)
            self._templates.clear()


def _own_huge_pages(template: WarmProcess) -> None:
    """Hold the template's heap in huge pages, so that each step's fork of a session (a
    fork of the template) is cheap (see proofeval_stubs.c). Its first clone first numbers
    its theorems with a full collection, which writes, and so unshares, nearly every page
    of its heap; after it, collapsing them costs no memory."""
    template.clone().close()
    template.state_request(["state_huge_pages"], START_LIMIT)


class HolLightStates:
    """One session's states of one problem, held by its own process."""

    def __init__(self, problem: Problem, proc: WarmProcess) -> None:
        self.problem = problem
        self.proc = proc

    def start(self, handle: str) -> Goals:
        """The statement's goal: one term, parsed in a confined child (see add_goal)."""
        timeout, memory_mb = STATEMENT_LIMITS
        statement = self.problem.statement
        fields = ["state_start", handle, statement, repr(float(timeout)), str(memory_mb)]
        reply = self.proc.state_request(fields, timeout + 60.0)
        if reply[0] != "ok" or len(reply) < 2 or not reply[1].isdigit():
            raise CheckerError(f"the statement is unusable: {reply[-1]}")
        return Goals(goals_of(int(reply[1]), reply[2:]))

    def apply(self, parent: str, handle: str, tactic: str, limits: StepLimits) -> Goals | Refused:
        timeout = repr(float(limits.timeout))
        fields = ["state_apply", parent, handle, timeout, str(limits.memory_mb), tactic]
        reply = self.proc.state_request(fields, _slack(limits))
        if reply[0] == "applied" and len(reply) >= 4:
            made, seconds, count = reply[1:4]
            if made.isdigit() and count.isdigit():
                goals = goals_of(int(count), reply[4:])
                return Goals(goals, made=int(made), seconds=_seconds(seconds))
        if reply[0] == "failed" and len(reply) == 5:
            return _refused(reply[1:])
        if reply[0] == "error":
            raise CheckerError(f"HOL Light refused the step: {reply[-1]}")
        raise CheckerError(f"unexpected reply from HOL Light to a step: {reply[:4]}")

    def release(self, handle: str) -> None:
        self.proc.state_request(["state_release", handle], 60.0)

    def search(self, pattern: str, limit: int, limits: StepLimits) -> list[str] | Refused:
        timeout = repr(float(limits.timeout))
        fields = ["state_search", pattern, str(limit), timeout, str(limits.memory_mb)]
        reply = self.proc.state_request(fields, _slack(limits))
        if reply[0] == "found" and len(reply) >= 2:
            return reply[2:]
        if reply[0] == "failed" and len(reply) == 5:
            return _refused(reply[1:])
        raise CheckerError(f"unexpected reply from HOL Light to a search: {reply[:4]}")

    def count(self) -> int:
        """How many states this process holds (for tests)."""
        return int(self.proc.state_request(["state_count"], 60.0)[1])

    def close(self) -> None:
        self.proc.close()


def goals_of(count: int, fields: list[str]) -> tuple[Goal, ...]:
    """`count` goals from their reply's fields (proofeval_states.ml's goal_fields): per
    goal its text, its number of hypotheses, each one's label and term, its conclusion."""
    goals: list[Goal] = []
    rest = fields
    for _ in range(count):
        if len(rest) < 2 or not rest[1].isdigit() or len(rest) < 3 + 2 * int(rest[1]):
            raise CheckerError("HOL Light's goals are not well-formed")
        text, n = rest[0], int(rest[1])
        pairs = rest[2 : 2 + 2 * n]
        hyps = tuple(Hypothesis(pairs[i], pairs[i + 1]) for i in range(0, 2 * n, 2))
        goals.append(Goal(hyps, rest[2 + 2 * n], "focused", text))
        rest = rest[3 + 2 * n :]
    if rest:
        raise CheckerError("HOL Light's goals are not well-formed")
    return tuple(goals)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if 0.0 <= value < math.inf else 0.0


def _refused(fields: list[str]) -> Refused:
    verdict, stage, message, seconds = fields
    try:
        outcome = Outcome(Verdict(verdict), Stage(stage), _seconds(seconds), message)
    except ValueError:
        raise CheckerError(f"unexpected verdict from HOL Light: {fields[:2]}") from None
    return Refused(outcome, _seconds(seconds))
