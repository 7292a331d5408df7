"""Coq's proof states: one warm, sandboxed coqtop per session and problem, with the
header loaded. A state is its path, the sentences that reach it from the statement; a
step states the theorem again, runs the path and the new sentences, and asks the plugin
for the goals (`ProofevalGoals`: read from the proof's data, every goal with its
hypotheses, framed so that no goal's text can forge the frame; plugin/check.mlg), then
goes back to the header with `Reset`. Coq's sentences take
milliseconds, so replaying the path costs little, and branching is free.

Every step's text goes through the answer policy first (policy.py: the sentences an
answer may hold, each parenthesized as one tactic) and runs within its own wall clock;
what coqtop prints is read between markers that carry a random value, as for an
attempt (session.py)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.model import Outcome, Problem, Stage, Verdict
from proofeval.provers.coq.checker import CoqChecker, context, sentence
from proofeval.provers.coq.policy import CLOSERS, Refusal, steps, theorem_name
from proofeval.provers.coq.sentences import SentenceError, split
from proofeval.provers.coq.session import CoqSession, Timeout
from proofeval.provers.coq.verdict import refused
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import KINDS, Goal, Goals, Hypothesis, Refused, StepLimits

PROMPT = re.compile(r"(?m)^\S* < ")
START_LIMIT = 600.0


class CoqStates:
    """One session's states of one problem: their paths, and a coqtop to run them."""

    def __init__(self, problem: Problem, settings: CheckSettings) -> None:
        self.problem = problem
        self.theorem = theorem_name(problem.statement)
        if self.theorem is None:
            raise CheckerError("the statement is not `Theorem name : ... .`")
        self._starter = CoqChecker(settings, lambda *_: None)
        self._starter.workdir = Path(tempfile.mkdtemp(prefix="proofeval-coq-states-"))
        self._session: CoqSession | None = None
        self.paths: dict[str, list[str]] = {}

    def _ready(self) -> CoqSession:
        if self._session is None or not self._session.alive:
            self._session = self._starter.start(context(self.problem))
        return self._session

    def start(self, handle: str) -> Goals:
        goals, error, statement_error = self._run([], [], START_LIMIT)
        if error or statement_error or goals is None:
            why = error or statement_error or "no goals"
            raise CheckerError(f"the statement is unusable: {why}")
        self.paths[handle] = []
        return goals

    def apply(self, parent: str, handle: str, tactic: str, limits: StepLimits) -> Goals | Refused:
        try:
            body = self._screen(tactic)
        except Refusal as refusal:
            return Refused(refused(refusal))
        path = self.paths[parent]
        session = self._ready()
        started = tree_cpu(session.pid)
        try:
            goals, error, path_error = self._run(path, body, limits.timeout)
        except Timeout:  # the session charges a timed-out step its whole limit
            self._session = None
            outcome = Outcome(
                Verdict.TIMEOUT, Stage.CHECK, limits.timeout, "wall-clock limit reached"
            )
            return Refused(outcome, limits.timeout)
        seconds = max(0.0, tree_cpu(session.pid) - started)
        if path_error:
            raise CheckerError(f"the state's path no longer runs: {path_error}")
        if error:
            return Refused(Outcome(Verdict.FAIL, Stage.CHECK, seconds, error), seconds)
        if goals is None:
            raise CheckerError("Coq gave no goals for the step")
        self.paths[handle] = path + body
        return Goals(goals.items, goals.messages, seconds=seconds)

    def _screen(self, tactic: str) -> list[str]:
        """The step's sentences as the checker would write them; Refusal if the answer
        language refuses them, or they close the proof (finish does that)."""
        try:
            sentences = split(tactic)
        except SentenceError as exc:
            raise Refusal(f"does not parse as Coq sentences: {exc}", cheating=False) from None
        if not sentences:
            raise Refusal("no sentence to run", cheating=False)
        if any(s.code.strip() in CLOSERS for s in sentences):
            raise Refusal("a step does not close the proof: finish does", cheating=False)
        assert self.theorem is not None
        return steps(tactic, self.theorem)

    def _run(
        self, path: list[str], body: list[str], timeout: float
    ) -> tuple[Goals | None, str, str]:
        """Run the statement, `path` and `body`; the goals (None if the plugin gave
        none), the body's first error and the path's."""
        session = self._ready()
        mark = f"proofeval_{secrets.token_hex(8)}"
        commands = [
            f"Definition {mark}_mark := Type.",
            sentence(self.problem.statement),
            "Proof.",
            *path,
            f"Check {mark}_path.",
            *body,
            f"Check {mark}_body.",
            f'ProofevalGoals "{mark}".',
            "Abort All.",
            f"Reset {mark}_mark.",
        ]
        out, err = session.run_commands(commands, time.monotonic() + timeout)
        before, _, after = err.partition(f"> Check {mark}_path.")
        body_err = after.partition(f"reference {mark}_path was not found")[2]
        body_err = body_err.partition(f"> Check {mark}_body.")[0]
        return framed_goals(out, mark), _first_error(body_err), _first_error(before)

    def release(self, handle: str) -> None:
        self.paths.pop(handle, None)

    def search(self, pattern: str, limit: int, limits: StepLimits) -> list[str] | Refused:
        command = f"Search {pattern.strip().removesuffix('.')}."
        try:
            if len(split(command)) != 1:
                raise SentenceError("more than one sentence")
        except SentenceError as exc:
            why = f"not one Search pattern: {exc}"
            return Refused(Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, why))
        mark = f"proofeval_{secrets.token_hex(8)}"
        commands = [f"Locate {mark}_begin.", command, f"Locate {mark}_end."]
        try:
            out, err = self._ready().run_commands(commands, time.monotonic() + limits.timeout)
        except Timeout:
            self._session = None
            outcome = Outcome(Verdict.TIMEOUT, Stage.CHECK, limits.timeout, "wall-clock limit")
            return Refused(outcome, limits.timeout)
        error = _first_error(err)
        if error:
            return Refused(Outcome(Verdict.FAIL, Stage.CHECK, 0.0, error))
        found = _between(out, f"{mark}_begin", f"{mark}_end")
        return _entries(found)[:limit]

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        shutil.rmtree(self._starter.workdir, ignore_errors=True)


def tree_cpu(pid: int) -> float:
    """CPU seconds spent so far by process `pid` and its descendants (live ones, and
    those they reaped): what a step costs coqtop, however busy the machine is."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        ticks[int(entry.name)] = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    todo, total = [pid], 0
    while todo:
        current = todo.pop()
        total += ticks.get(current, 0)
        todo.extend(children.get(current, []))
    return total / os.sysconf("SC_CLK_TCK")


def _between(text: str, start: str, end: str) -> str:
    """What was printed after the line naming `start` and before the one naming `end`."""
    i = text.find(start)
    j = text.find(end, i + 1)
    if i < 0 or j < 0:
        return ""
    return text[text.find("\n", i) + 1 : text.rfind("\n", 0, j) + 1]


def framed_goals(out: str, nonce: str) -> Goals | None:
    """The goals in the plugin's one reply for `nonce` (check.mlg's ProofevalGoals: hex
    of a JSON object); None if there is not exactly one, or it is not well-formed."""
    found = re.findall(rf"proofeval-goals:{nonce}:([0-9a-f]*)", out)
    if len(found) != 1:
        return None
    try:
        data = json.loads(bytes.fromhex(found[0]).decode("utf-8", "replace"))
        return Goals(tuple(_goal(g) for g in data["goals"]), tuple(data["messages"]))
    except (ValueError, KeyError, TypeError):
        return None


def _goal(data: dict) -> Goal:
    hyps = tuple(Hypothesis(h["name"], h["type"], h.get("body")) for h in data["hyps"])
    texts = [data["conclusion"], *(t for h in hyps for t in (h.name, h.type, h.body or ""))]
    if data["kind"] not in KINDS or not all(isinstance(t, str) for t in texts):
        raise ValueError("not a goal")
    return Goal(hyps, data["conclusion"], data["kind"], coq_text(hyps, data["conclusion"]))


def coq_text(hyps: tuple[Hypothesis, ...], conclusion: str) -> str:
    """A goal as Coq's Show prints it: a hypothesis a line, a bar, the conclusion."""
    lines = [h.name + ("" if h.body is None else f" := {h.body}") + f" : {h.type}" for h in hyps]
    return "\n".join([*lines, "============================", conclusion])


def _first_error(err: str) -> str:
    """The first error Coq printed in `err`, without its prompts, on one line."""
    i = err.find("Error:")
    if i < 0:
        return ""
    text = PROMPT.split(err[i:])[0]
    return " ".join(text.split())


def _entries(printed: str) -> list[str]:
    """Search's results, one per entry (an entry's continuation lines are indented)."""
    entries: list[str] = []
    for line in printed.splitlines():
        if line[:1].isspace() and entries:
            entries[-1] += "\n" + line
        elif line.strip():
            entries.append(line)
    return entries
