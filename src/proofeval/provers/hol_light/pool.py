"""Check many attempts in parallel against warm HOL Light contexts.

The core is loaded once (the base process). Each distinct context (header text and
directory) is loaded once, into a fork of the base: the context's template. Each worker
checks attempts in its own fork of a template, and every attempt in a fork of that.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.hol_light.server import (
    DEBIAN_HOL_LIGHT,
    CheckerError,
    Launcher,
    WarmProcess,
)

ResultCallback = Callable[[Attempt, Outcome], None]
EventCallback = Callable[[str], None]


@dataclass(frozen=True)
class CheckSettings:
    workers: int = 2
    memory_mb: int = 4096
    sandbox: bool = True
    hol_dir: Path = DEBIAN_HOL_LIGHT


@dataclass(frozen=True)
class Job:
    attempt: Attempt
    problem: Problem
    timeout: float


def context_key(problem: Problem) -> tuple[str, str]:
    return (problem.header, problem.directory)


@dataclass
class Context:
    """One distinct context and the attempts still to check in it."""

    key: tuple[str, str]
    problems: dict[str, Problem]
    pending: deque[Job] = field(default_factory=deque)
    state: str = "new"  # new -> loading -> ready | failed
    template: WarmProcess | None = None
    failure: str = ""
    goal_errors: dict[str, str] = field(default_factory=dict)
    active: int = 0  # workers holding a clone of the template

    def label(self) -> str:
        first = next(iter(self.problems))
        return f"context of {first}" + (
            f" (+{len(self.problems) - 1})" if len(self.problems) > 1 else ""
        )


class Scheduler:
    """Hands each worker its next job, loading contexts as they are first needed."""

    def __init__(self, contexts: list[Context]) -> None:
        self.contexts = contexts
        self.cond = threading.Condition()

    def next_job(self, current: Context | None) -> tuple[Context, Job, bool] | None:
        """(context, job, must_load): must_load means the caller loads the context first."""
        with self.cond:
            while True:
                pick = self._pick(current)
                if pick is not None:
                    ctx, must_load = pick
                    if must_load:
                        ctx.state = "loading"
                    if ctx is not current:
                        self._leave(current)
                        ctx.active += 1
                    return ctx, ctx.pending.popleft(), must_load
                if not any(c.state == "loading" for c in self.contexts):
                    self._leave(current)
                    return None
                self.cond.wait()

    @staticmethod
    def _leave(ctx: Context | None) -> None:
        if ctx is None:
            return
        ctx.active -= 1
        if not ctx.pending and ctx.active == 0 and ctx.template is not None:
            ctx.template.close()  # frees its memory; nobody will clone it again
            ctx.template = None

    def _pick(self, current: Context | None) -> tuple[Context, bool] | None:
        if current is not None and current.state == "ready" and current.pending:
            return current, False
        ready = [c for c in self.contexts if c.state in ("ready", "failed") and c.pending]
        if ready:
            return min(ready, key=lambda c: c.active), False
        fresh = [c for c in self.contexts if c.state == "new" and c.pending]
        return (fresh[0], True) if fresh else None

    def loaded(self, ctx: Context) -> None:
        with self.cond:
            self.cond.notify_all()

    def abort(self) -> None:
        """Stop every worker after a failure that is not an attempt's fault."""
        with self.cond:
            for ctx in self.contexts:
                ctx.pending.clear()
                if ctx.state == "loading":
                    ctx.state = "failed"
            self.cond.notify_all()


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
        self._templates: list[WarmProcess] = []

    def run(self, jobs: Iterable[Job]) -> None:
        contexts = self._group(jobs)
        if not contexts:
            return
        scheduler = Scheduler(contexts)
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._worker, args=(scheduler, errors), daemon=True)
            for _ in range(max(1, self.settings.workers))
        ]
        try:
            for t in threads:
                t.start()
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
        if self.launcher is not None:
            self.launcher.close()
            self.launcher = None
            self.base = None

    @staticmethod
    def _group(jobs: Iterable[Job]) -> list[Context]:
        by_key: dict[tuple[str, str], Context] = {}
        for job in jobs:
            key = context_key(job.problem)
            ctx = by_key.setdefault(key, Context(key, {}))
            ctx.problems[job.problem.id] = job.problem
            ctx.pending.append(job)
        return list(by_key.values())

    def _base(self) -> WarmProcess:
        with self._base_lock:
            if self.base is None:
                self.on_event("loading the HOL Light core (about 2-3 minutes)")
                self.launcher = Launcher(self.settings.hol_dir, self.settings.sandbox)
                self.base = self.launcher.start()
                self.on_event("HOL Light core loaded")
            return self.base

    def _load(self, ctx: Context) -> None:
        base = self._base()  # failing to start HOL Light at all is fatal, not per context
        try:
            template = base.clone()
            self._templates.append(template)
            if ctx.key[0].strip():
                self.on_event(f"loading the {ctx.label()}")
                path = template.launcher.scratch_file("context", ctx.key[0])
                template.load(path, ctx.key[1])
            for problem in ctx.problems.values():
                why = template.add_goal(problem.id, problem.statement)
                if why is not None:
                    ctx.goal_errors[problem.id] = why
            ctx.template, ctx.state = template, "ready"
        except CheckerError as exc:
            ctx.failure, ctx.state = str(exc), "failed"
            self.on_event(f"{ctx.label()}: {exc}")

    def _worker(self, scheduler: Scheduler, errors: list[BaseException]) -> None:
        current: Context | None = None
        own: WarmProcess | None = None
        try:
            while (got := scheduler.next_job(current)) is not None:
                ctx, job, must_load = got
                if must_load:
                    self._load(ctx)
                    scheduler.loaded(ctx)
                if ctx is not current:
                    if own is not None:
                        own.close()
                    own, current = None, ctx
                own = self._check_one(ctx, own, job)
        except BaseException as exc:  # surfaced by run(); never lose it silently
            errors.append(exc)
            scheduler.abort()
        finally:
            if own is not None:
                own.close()

    def _check_one(self, ctx: Context, own: WarmProcess | None, job: Job) -> WarmProcess | None:
        refusal = ctx.failure or ctx.goal_errors.get(job.problem.id)
        if refusal:
            prefix = "" if ctx.failure else "the statement is unusable: "
            self.on_result(
                job.attempt, Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, prefix + refusal)
            )
            return own
        try:
            if own is None:
                assert ctx.template is not None
                own = ctx.template.clone()
            outcome = own.check(
                job.problem.id, job.attempt.proof, job.timeout, self.settings.memory_mb
            )
        except CheckerError as exc:
            if own is not None:
                own.close()
            own = None
            outcome = Outcome(Verdict.ERROR, Stage.CHECK, 0.0, f"checker failure: {exc}")
        self.on_result(job.attempt, outcome)
        return own
