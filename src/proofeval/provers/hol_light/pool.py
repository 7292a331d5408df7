"""Check many attempts in parallel against warm HOL Light contexts.

The core is loaded once (the base process). Each node of the context tree (contexts.py)
is loaded once, into a fork of its parent node's process: its template. Each worker
checks attempts in its own fork of a template, and every attempt runs in a fork of
that. Attempts may arrive while checking goes on (`submit`, then `finish`), and may name
problems that were not planned: they join the context of their header (their goal is
registered in its template when first needed) or get a context of their own.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.model import Outcome, Problem, Stage, Verdict
from proofeval.provers.hol_light import contexts
from proofeval.provers.hol_light.loaded import contexts_of
from proofeval.provers.hol_light.server import STATEMENT_LIMITS, Launcher, WarmProcess, launcher
from proofeval.provers.interface import (
    CheckSettings,
    EventCallback,
    Job,
    ResultCallback,
    checker_failure,
)


@dataclass(eq=False)
class Slot:
    """The loading state of one context-tree node, and the attempts waiting on it."""

    node: contexts.Node
    parent: Slot | None
    state: str = "new"  # new -> loading -> ready | failed
    template: WarmProcess | None = None
    failure: str = ""
    goal_errors: dict[str, str] = field(default_factory=dict)  # by goal_key
    goals: set[str] = field(default_factory=set)  # the goal_keys the template knows
    generation: int = 0  # goals added to the template after it loaded; clones older lack them
    pending: deque[Job] = field(default_factory=deque)
    active: int = 0  # workers on this context
    holds: int = 0  # reasons to keep the template: unloaded children, unfinished attempts
    shared: bool = False  # the template is the core's (loaded.py), not this checker's
    attempts_done: bool = False

    def label(self) -> str:
        ids = sorted(self.node.problems)
        first = ids[0] if ids else "a shared prefix"
        return f"context of {first}" + (f" (+{len(ids) - 1})" if len(ids) > 1 else "")


def free(slot: Slot) -> None:
    """Let the slot's template go: closed if it is this checker's, else given back."""
    template, slot.template = slot.template, None
    if template is not None and slot.shared:
        contexts_of(template).release(template)
    elif template is not None:
        template.close()


def goal_key(problem: Problem) -> str:
    """A goal's name in a template: its problem's id and statement, so that checkers
    sharing a template (loaded.py) never take one problem's goal for another's."""
    named = f"{len(problem.id)}:{problem.id}{problem.statement}"
    return hashlib.sha256(named.encode()).hexdigest()[:32]


class Scheduler:
    """Hands each worker its next job; keeps each template exactly as long as needed."""

    def __init__(self, slots: dict[contexts.Node, Slot], order: list[Slot]) -> None:
        self.slots = slots
        self.order = order  # contexts in the order their problems were given
        self.cond = threading.Condition()
        self.finished = False
        for slot in slots.values():
            if slot.parent is not None:
                slot.parent.holds += 1
        for slot in order:
            slot.holds += 1  # released when its last attempt is done

    def adopt(self, problem: Problem) -> Slot:
        """The slot of a problem that was not planned: the context with the same header,
        or a new one loaded on its own."""
        with self.cond:
            for slot in self.order:
                node = slot.node
                if node.text == problem.header and node.directory == problem.directory:
                    node.problems[problem.id] = problem
                    return slot
            node = contexts.Node(problem.header, problem.directory, None, {problem.id: problem})
            slot = Slot(node, None, holds=1)
            self.slots[node] = slot
            self.order.append(slot)
            return slot

    def submit(self, slot: Slot, job: Job) -> None:
        with self.cond:
            slot.pending.append(job)
            self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.finished = True
            for slot in self.order:
                self._maybe_done(slot)
            self.cond.notify_all()

    def abort(self) -> None:
        """Stop every worker after a failure that is not an attempt's fault."""
        with self.cond:
            self.finished = True
            for slot in self.slots.values():
                slot.pending.clear()
                if slot.state == "loading":
                    slot.state = "failed"
            self.cond.notify_all()

    def next_job(self, current: Slot | None) -> tuple[Slot, Job] | None:
        with self.cond:
            while True:
                slot = self._pick(current)
                if slot is not None:
                    if slot is not current:
                        self._leave(current)
                        slot.active += 1
                    return slot, slot.pending.popleft()
                if self.finished:
                    self._leave(current)
                    return None
                self.cond.wait()

    def _pick(self, current: Slot | None) -> Slot | None:
        if current is not None and current.pending:
            return current
        waiting = [s for s in self.order if s.pending]
        for states in (("ready", "failed"), ("new",), ("loading",)):
            candidates = [s for s in waiting if s.state in states]
            if candidates:
                return min(candidates, key=lambda s: s.active)
        return None

    def _leave(self, slot: Slot | None) -> None:
        if slot is not None:
            slot.active -= 1
            self._maybe_done(slot)

    def _maybe_done(self, slot: Slot) -> None:
        if self.finished and not slot.pending and slot.active == 0 and not slot.attempts_done:
            slot.attempts_done = True
            self._release(slot)

    def release(self, slot: Slot) -> None:
        with self.cond:
            self._release(slot)

    def _release(self, slot: Slot) -> None:
        slot.holds -= 1
        if slot.holds == 0 and slot.parent is not None and slot.template is not None:
            free(slot)  # frees its memory; nobody here will clone it again


class HolLightChecker:
    """Runs jobs through a pool of worker threads, each driving one warm process."""

    def __init__(
        self,
        settings: CheckSettings,
        on_result: ResultCallback,
        on_event: EventCallback = lambda _msg: None,
        base: WarmProcess | None = None,
    ) -> None:
        """`base`: a warm process with the core loaded to reuse (it is not closed)."""
        self.settings = settings
        self.on_result = on_result
        self.on_event = on_event
        self.launcher: Launcher | None = None
        self.base: WarmProcess | None = base
        self._base_lock = threading.Lock()
        self._templates: list[WarmProcess] = []  # this checker's own
        self._shared: list[Slot] = []  # slots holding one of the core's shared templates
        self._template_lock = threading.Lock()  # one request at a time on a template
        self._directories: set[Path] = set()  # where contexts load files from

    def run(self, jobs: Iterable[Job], problems: Iterable[Problem] | None = None) -> None:
        """Check every job. With `problems` (every problem jobs may name), jobs are
        consumed as they come, so they may be produced while checking goes on."""
        if problems is None:
            jobs = list(jobs)
            problems = {j.problem.id: j.problem for j in jobs}.values()
        problems = list(problems)
        self._directories = {Path(p.directory) for p in problems if p.directory}
        by_problem, scheduler = self._plan(problems)
        # Here, not in a worker: bwrap dies with the thread that started it.
        self._base()
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._worker, args=(scheduler, errors), daemon=True)
            for _ in range(max(1, self.settings.workers))
        ]
        try:
            for t in threads:
                t.start()
            self._feed(jobs, by_problem, scheduler, errors)
            for t in threads:
                t.join()
        finally:
            self.close()
        if errors:
            raise errors[0]

    def close(self) -> None:
        for template in self._templates:
            template.close()
        self._templates.clear()
        for slot in self._shared:
            free(slot)
        self._shared.clear()
        if self.launcher is not None:
            self.launcher.close()
            self.launcher = None
            self.base = None

    @staticmethod
    def _plan(problems: Iterable[Problem]) -> tuple[dict[str, Slot], Scheduler]:
        nodes = contexts.build(problems)
        slots: dict[contexts.Node, Slot] = {}

        def slot_of(node: contexts.Node) -> Slot:
            if node not in slots:
                parent = None if node.parent is None else slot_of(node.parent)
                slots[node] = Slot(node, parent)
            return slots[node]

        by_problem = {pid: slot_of(node) for pid, node in nodes.items()}
        order = list(dict.fromkeys(by_problem.values()))
        return by_problem, Scheduler(slots, order)

    @staticmethod
    def _feed(
        jobs: Iterable[Job], by_problem: dict[str, Slot], scheduler: Scheduler, errors: list
    ) -> None:
        try:
            for job in jobs:
                if errors:
                    break
                slot = by_problem.get(job.problem.id)
                if slot is None:
                    slot = by_problem[job.problem.id] = scheduler.adopt(job.problem)
                scheduler.submit(slot, job)
        finally:
            scheduler.finish()

    @property
    def _statement_limits(self) -> tuple[float, int]:
        """A statement is parsed within the attempts' memory."""
        return (STATEMENT_LIMITS[0], self.settings.memory_mb)

    def _base(self) -> WarmProcess:
        with self._base_lock:
            if self.base is None:
                self.launcher = launcher(self.settings, self._directories, self.on_event)
                self.base = self.launcher.start()
                self.on_event("HOL Light core loaded")
            return self.base

    def _ensure(self, slot: Slot, scheduler: Scheduler) -> None:
        """Load this node and any ancestor not loaded yet, top down (a source file can
        chain hundreds of contexts, so no recursion), or wait for whoever loads them."""
        chain: list[Slot] = []
        node: Slot | None = slot
        while node is not None and node.state != "ready":
            chain.append(node)
            node = node.parent
        for each in reversed(chain):
            self._ensure_one(each, scheduler)

    def _ensure_one(self, slot: Slot, scheduler: Scheduler) -> None:
        """Load this node, whose parent is loaded (or failed), or wait for whoever is."""
        with scheduler.cond:
            while slot.state == "loading":
                scheduler.cond.wait()
            if slot.state != "new":
                return
            slot.state = "loading"
        try:
            self._load(slot, scheduler)
        finally:
            with scheduler.cond:
                if slot.state == "loading":
                    slot.state = "failed"
                    slot.failure = slot.failure or "loading was interrupted"
                scheduler.cond.notify_all()
            if slot.parent is not None:
                scheduler.release(slot.parent)

    def _load(self, slot: Slot, scheduler: Scheduler) -> None:
        if slot.parent is not None and slot.parent.state == "failed":
            slot.failure, slot.state = slot.parent.failure, "failed"
            return
        try:
            if slot.node.remainder().strip():
                self.on_event(f"loading the {slot.label()}")
            template = self._template(slot)
            with scheduler.cond:
                problems = list(slot.node.problems.values())
            for problem in problems:
                key = goal_key(problem)
                why = template.add_goal(key, problem.statement, self._statement_limits)
                if why is not None:
                    slot.goal_errors[key] = why
                slot.goals.add(key)
        except CheckerError as exc:
            slot.failure, slot.state = str(exc), "failed"
            self.on_event(f"{slot.label()}: {exc}")
            return
        slot.template, slot.state = template, "ready"

    def _template(self, slot: Slot) -> WarmProcess:
        """A problem's whole header (on the bare core) is the core's shared template of
        it (loaded.py), which proof states fork too; a shared prefix, or what a node adds
        to its parent's, is loaded into a fork of this checker's own."""
        node = slot.node
        if node.problems and (slot.parent is None or slot.parent.node.text == ""):
            base = self._base()
            template = contexts_of(base).acquire(
                base, node.text, node.directory, self.settings.memory_mb
            )
            slot.template, slot.shared = template, True
            self._shared.append(slot)  # released at the end even if a goal fails
            node.loaded = node.text
            return template
        source = self._base() if slot.parent is None else slot.parent.template
        assert source is not None
        with self._template_lock:
            template = source.clone()
        self._templates.append(template)
        contexts.load(node, template, self.settings.memory_mb)
        return template

    def _worker(self, scheduler: Scheduler, errors: list[BaseException]) -> None:
        current: Slot | None = None
        own: WarmProcess | None = None
        generation = 0  # of the template when `own` was cloned
        try:
            while (got := scheduler.next_job(current)) is not None:
                slot, job = got
                if slot is not current:
                    if own is not None:
                        own.close()
                    own, current = None, slot
                self._ensure(slot, scheduler)
                self._add_late_goal(slot, job.problem)
                if own is not None and generation != slot.generation:
                    own.close()  # it lacks a goal added since it was cloned
                    own = None
                if own is None:
                    generation = slot.generation  # read before the clone, never after
                own = self._check_one(slot, own, job)
        except BaseException as exc:  # surfaced by run(); never lose it silently
            errors.append(exc)
            scheduler.abort()
        finally:
            if own is not None:
                own.close()

    def _add_late_goal(self, slot: Slot, problem: Problem) -> None:
        """Register the goal of a problem adopted after its context loaded."""
        key = goal_key(problem)
        with self._template_lock:
            if slot.failure or slot.template is None or key in slot.goals:
                return
            try:
                why = slot.template.add_goal(key, problem.statement, self._statement_limits)
            except CheckerError as exc:  # this problem's attempts are ERRORs, not the run
                why = str(exc)
            if why is not None:
                slot.goal_errors[key] = why
            slot.goals.add(key)
            slot.generation += 1

    def _check_one(self, slot: Slot, own: WarmProcess | None, job: Job) -> WarmProcess | None:
        key = goal_key(job.problem)
        refusal = slot.failure or slot.goal_errors.get(key)
        if refusal:
            prefix = "" if slot.failure else "the statement is unusable: "
            outcome = Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, prefix + refusal)
            self.on_result(job.attempt, outcome)
            return own
        try:
            if own is None:
                assert slot.template is not None
                with self._template_lock:
                    own = slot.template.clone()
            settings = self.settings
            outcome = own.check(
                key, job.attempt.proof, job.timeout, settings.memory_mb, settings.replay
            )
        except Exception as exc:  # whatever the prover side did, it is this attempt's ERROR
            if own is not None:
                own.close()  # its connection may be out of step: the next attempt clones anew
            own = None
            outcome = checker_failure(exc)
        self.on_result(job.attempt, outcome)  # outside the try: a store failure stops the run
        return own
