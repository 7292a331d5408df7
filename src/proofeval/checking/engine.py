"""The one checking engine: `proofeval check`, `run`, the Python API, the service and
Ray's nodes all send their attempts through an Engine.

An attempt (a Job: attempt, problem, time limit) goes to a lane: one long-lived run of
its prover's checker (provers/interface.py), fed attempts as they come. Problems given
to `plan` together share one lane per prover, so that a prover can share work among
them (HOL Light loads every shared prefix of their contexts once); any other problem
gets the lane of its context (prover, directory, header), made when first needed.
At most `settings.workers` attempts of each prover are checked at a time, whatever the
number of its lanes (a run that mixes provers checks them side by side): this is the one
place that decides parallelism. A context lane idle for
`idle_seconds`, or the least recently used idle one while the prover processes use more
than `max_memory_mb`, is closed; the next attempt on it loads it again. A prover's shared
process (HOL Light's core) is started once, in a thread that lives as long as the engine.

A lane whose checker fails (the prover is missing) fails each of its attempts: as an
ERROR outcome, or as the exception itself for a caller that asked for it (a batch run
stops rather than record a prover's absence as verdicts).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from proofeval.checking.memory import descendants_mb
from proofeval.errors import InputError
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import (
    CheckSettings,
    EventCallback,
    Job,
    ResultCallback,
    checker_failure,
)

TICK = 1.0  # seconds between looks at idle contexts and memory


def digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def context_key(problem: Problem) -> str:
    """What a warm context is for: the prover, the directory and the header."""
    return digest(registry.canonical(problem.prover), problem.directory, problem.header)


@dataclass
class Stats:
    queued: int  # attempts waiting for a worker
    running: int
    contexts: int  # warm contexts kept
    memory_mb: float  # of every prover process, at the last look


NO_PROOF = Outcome(
    Verdict.FAIL, Stage.EXTRACT, 0.0, "no proof in the answer: nothing to check after extraction"
)


def _settled(task: _Task, outcome: Outcome) -> Future[Outcome]:
    task.future.set_running_or_notify_cancel()
    task.future.set_result(outcome)
    return task.future


class Remote(Protocol):
    """Where attempts go instead of this machine's provers (scale/ray_cluster.py)."""

    def submit(self, key: str, job: Job, answer: ResultCallback) -> None: ...

    def contexts(self) -> int: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class _Task:
    key: str
    job: Job
    future: Future[Outcome]
    raises: bool  # a lane's failure is this task's exception, not an ERROR outcome
    order: int = 0  # submission order, across provers


class _Shared:
    """A prover's process that every lane shares, started in a thread that lives as long
    as the engine: the sandbox dies with the thread that started it."""

    def __init__(
        self,
        prover: str,
        settings: CheckSettings,
        read_only: list[Path],
        given: SharedProcess | None,
        on_event: EventCallback,
    ) -> None:
        self.on_event = on_event
        self.ready = threading.Event()
        self.process = given
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if given is None and registry.has_shared(prover):
            args = (prover, settings, read_only)
            self._thread = threading.Thread(target=self._run, args=args, daemon=True)
            self._thread.start()
        else:
            self.ready.set()

    def _run(self, prover: str, settings: CheckSettings, read_only: list[Path]) -> None:
        try:
            started = registry.start_shared(prover, settings, read_only, self.on_event)
        except BaseException as exc:  # every lane of this prover gives it as its failure
            self.on_event(f"{prover} did not start: {exc}")
            self.error = exc
            self.ready.set()
            return
        assert started is not None
        self.process = started.process
        self.ready.set()
        self._stop.wait()
        started.close()

    def get(self) -> SharedProcess | None:
        self.ready.wait()
        if self.error is not None:
            raise self.error
        return self.process

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass(eq=False)
class _Lane:
    """One long-lived run of a prover's checker, in a thread of its own."""

    key: str
    prover: str
    problems: list[Problem]  # planned together: the checker sees them all from the start
    planned: bool
    jobs: queue.Queue = field(default_factory=queue.Queue)
    tasks: dict[Attempt, _Task] = field(default_factory=dict)  # sent, not answered yet
    last_used: float = field(default_factory=time.monotonic)
    ended: bool = False
    thread: threading.Thread | None = None

    def stream(self):
        while (job := self.jobs.get()) is not None:
            yield job


class Engine:
    """See the module's docstring. Use it as a context manager; `close` finishes every
    attempt submitted, then stops every prover process."""

    def __init__(
        self,
        settings: CheckSettings | None = None,
        *,
        max_memory_mb: float | None = None,
        idle_seconds: float = 600.0,
        read_only: Iterable[Path] = (),
        warm: Mapping[str, SharedProcess] | None = None,
        on_event: EventCallback | None = None,
        remote: Remote | None = None,
    ) -> None:
        self.settings = settings or CheckSettings()
        self.max_memory_mb = max_memory_mb
        self.idle_seconds = idle_seconds
        self.on_event = on_event or (lambda _msg: None)
        self._read_only = list(read_only)
        self._given = dict(warm or {})
        self._shared: dict[str, _Shared] = {}
        self._planned: dict[str, str] = {}  # problem id -> its planned lane's key
        self._cond = threading.Condition()
        self._queues: dict[str, deque[_Task]] = {}  # by prover, each in arrival order
        self._lanes: OrderedDict[str, _Lane] = OrderedDict()  # least recently used first
        self._retired: list[threading.Thread] = []  # ended lanes', maybe closing checkers
        self._closed = threading.Event()  # wakes _maintain from its tick
        self._running: dict[str, int] = {}  # by prover
        self._closing = False
        self._memory_mb = 0.0
        self._remote = remote
        self._order = itertools.count()
        self._threads = [
            threading.Thread(target=self._dispatch, daemon=True),
            threading.Thread(target=self._maintain, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- calls ---------------------------------------------------------------------------

    def plan(self, problems: Iterable[Problem]) -> None:
        """Check these problems' attempts together: one lane per prover, whose checker
        knows them all from its start (a planned lane is never closed for being idle)."""
        by_prover: dict[str, list[Problem]] = {}
        for problem in problems:
            by_prover.setdefault(registry.canonical(problem.prover), []).append(problem)
        with self._cond:
            for prover, group in by_prover.items():
                key = f"plan {len(self._lanes)} {prover}"
                self._lanes[key] = _Lane(key, prover, group, planned=True)
                self._planned |= {p.id: key for p in group}

    def submit(self, job: Job, raises: bool = False) -> Future[Outcome]:
        """Queue one attempt; its future gets the outcome. `raises`: a failure of its
        prover's checker is the future's exception (else its ERROR outcome). A prover
        proofeval cannot check gets an ERROR that says why."""
        key = self._planned.get(job.problem.id) or context_key(job.problem)
        task = _Task(key, job, Future(), raises, next(self._order))
        refusal = registry.check_error(job.problem.prover)
        if refusal is not None:  # one ERROR for this attempt, never the whole batch lost
            return _settled(task, Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, refusal))
        if not job.attempt.proof.strip():  # the same on every prover: nothing to check
            return _settled(task, NO_PROOF)
        with self._cond:
            if self._closing:
                raise InputError("this checker is closed")
            prover = registry.canonical(job.problem.prover)
            self._queues.setdefault(prover, deque()).append(task)
            self._cond.notify_all()
        return task.future

    def shared_process(self, prover: str) -> SharedProcess | None:
        """`prover`'s shared process on this machine (HOL Light's core), started if need
        be; what else uses it (proof states) forks it."""
        if self._remote is not None:
            raise InputError("proof states need the provers on this machine, not on Ray")
        return self._shared_of(registry.canonical(prover)).get()

    def stats(self) -> Stats:
        with self._cond:
            queued = sum(not t.future.cancelled() for q in self._queues.values() for t in q)
            contexts = len(self._lanes) if self._remote is None else self._remote.contexts()
            running = sum(self._running.values())
        if self.max_memory_mb is None:  # else _maintain measures it every TICK
            self._memory_mb = descendants_mb()
        return Stats(queued, running, contexts, self._memory_mb)

    def contexts(self) -> list[str]:
        """The keys (context_key) of the warm context lanes, least recently used first."""
        with self._cond:
            return [lane.key for lane in self._lanes.values() if not lane.planned]

    def close(self) -> None:
        """Finish what was submitted, then stop every prover process."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            while self._busy():
                self._cond.wait()
            for lane in list(self._lanes.values()):
                self._end(lane)
            lanes = list(self._retired)
        self._closed.set()
        for thread in self._threads + lanes:
            thread.join()
        for shared in self._shared.values():
            shared.close()
        if self._remote is not None:
            self._remote.close()

    def abort(self, wait: float = 30.0) -> None:
        """Stop now (Ctrl-C, SIGTERM): attempts not started are cancelled, those started
        finish within their limits, and each lane's checker is given up to `wait` seconds
        to end and clean up after itself (its scratch directories, its processes)."""
        with self._cond:
            self._closing = True
            for queued in self._queues.values():
                for task in queued:
                    task.future.cancel()
                queued.clear()
            for lane in list(self._lanes.values()):
                self._end(lane)
            lanes = list(self._retired)
            self._cond.notify_all()
        deadline = time.monotonic() + wait
        for thread in lanes:
            thread.join(max(0.0, deadline - time.monotonic()))
        for shared in self._shared.values():
            shared.close()

    # --- dispatching ---------------------------------------------------------------------

    def _busy(self) -> bool:
        return any(self._queues.values()) or any(self._running.values())

    def _dispatch(self) -> None:
        """Send queued attempts to their lanes, at most `workers` of a prover at a time."""
        with self._cond:
            while True:
                while (task := self._next()) is None:
                    if self._closing and not any(self._queues.values()):
                        return
                    self._cond.wait()
                if not task.future.set_running_or_notify_cancel():
                    continue  # its caller went away before it started
                prover = registry.canonical(task.job.problem.prover)
                self._running[prover] = self._running.get(prover, 0) + 1
                if self._remote is not None:
                    answer = lambda _a, o, t=task: self._finish(t, o)  # noqa: E731
                    self._remote.submit(context_key(task.job.problem), task.job, answer)
                    continue
                lane = self._lane(task)
                lane.tasks[task.job.attempt] = task
                lane.jobs.put(task.job)

    def _next(self) -> _Task | None:
        """The oldest queued attempt of a prover with a worker free (lock held)."""
        # A remote executor (Ray's nodes) bounds the attempts in flight itself.
        workers = max(1, self.settings.workers) if self._remote is None else math.inf
        ready = [
            queued[0]
            for prover, queued in self._queues.items()
            if queued and self._running.get(prover, 0) < workers
        ]
        if not ready:
            return None
        task = min(ready, key=lambda t: t.order)
        self._queues[registry.canonical(task.job.problem.prover)].popleft()
        return task

    def _lane(self, task: _Task) -> _Lane:
        lane = self._lanes.get(task.key)
        if lane is None:
            prover = registry.canonical(task.job.problem.prover)
            lane = self._lanes[task.key] = _Lane(task.key, prover, [], planned=False)
        if lane.thread is None:
            lane.thread = threading.Thread(target=self._run_lane, args=(lane,), daemon=True)
            lane.thread.start()
        self._lanes.move_to_end(task.key)
        lane.last_used = time.monotonic()
        return lane

    def _run_lane(self, lane: _Lane) -> None:
        failure: BaseException | None = None
        try:
            shared = self._shared_of(lane.prover).get()
            answer = lambda a, o: self._answer(lane, a, o)  # noqa: E731
            checker = registry.make_checker(
                lane.prover, self.settings, answer, self.on_event, shared
            )
            checker.run(lane.stream(), lane.problems)
        except BaseException as exc:  # the attempts of this lane fail with it
            failure = exc
        with self._cond:
            self._end(lane)
            left = list(lane.tasks.values())
            lane.tasks.clear()
        for task in left:
            if failure is not None and task.raises:
                self._finish(task, failure)
            elif failure is not None:
                self._finish(task, checker_failure(failure))  # type: ignore[arg-type]
            else:
                stopped = Outcome(Verdict.ERROR, Stage.CHECK, 0.0, "the checker stopped")
                self._finish(task, stopped)

    def _answer(self, lane: _Lane, attempt: Attempt, outcome: Outcome) -> None:
        with self._cond:
            task = lane.tasks.pop(attempt, None)
            if task is None:
                return
            lane.last_used = time.monotonic()
        self._finish(task, outcome)

    def _finish(self, task: _Task, result: Outcome | BaseException) -> None:
        with self._cond:
            prover = registry.canonical(task.job.problem.prover)
            self._running[prover] -= 1
            self._cond.notify_all()
        if isinstance(result, BaseException):
            task.future.set_exception(result)
        else:
            task.future.set_result(result)

    def _end(self, lane: _Lane) -> None:
        """Close a lane (called with the lock held): no attempt is sent to it again."""
        if not lane.ended:
            lane.ended = True
            lane.jobs.put(None)
            if lane.thread is not None:  # joined when the engine closes
                self._retired = [t for t in self._retired if t.is_alive()] + [lane.thread]
        if self._lanes.get(lane.key) is lane:
            del self._lanes[lane.key]
        if lane.planned:  # its problems' later attempts get lanes of their contexts
            self._planned = {pid: k for pid, k in self._planned.items() if k != lane.key}

    def _shared_of(self, prover: str) -> _Shared:
        with self._cond:
            if prover not in self._shared:
                given = self._given.get(prover)
                self._shared[prover] = _Shared(
                    prover, self.settings, self._read_only, given, self.on_event
                )
            return self._shared[prover]

    # --- eviction ------------------------------------------------------------------------

    def _maintain(self) -> None:
        while True:
            with self._cond:
                if self._closing and not self._busy():
                    return
            if self.max_memory_mb is not None:
                self._memory_mb = descendants_mb()
            self._evict_idle()
            self._evict_for_memory()
            self._closed.wait(TICK)

    def _idle(self) -> list[_Lane]:
        return [lane for lane in self._lanes.values() if not lane.tasks and not lane.planned]

    def _evict_idle(self) -> None:
        now = time.monotonic()
        with self._cond:
            for lane in self._idle():
                if now - lane.last_used > self.idle_seconds:
                    self._end(lane)

    def _evict_for_memory(self) -> None:
        if self.max_memory_mb is None:
            return
        while self._memory_mb > self.max_memory_mb:
            with self._cond:
                idle = self._idle()
                if not idle:
                    return
                self._end(idle[0])  # the least recently used
            if idle[0].thread is not None:
                idle[0].thread.join(timeout=30.0)
            self._memory_mb = descendants_mb()


def check_all(
    jobs: Iterable[Job],
    problems: Iterable[Problem],
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback = lambda _msg: None,
    warm: Mapping[str, SharedProcess] | None = None,
    remote: Remote | None = None,
) -> None:
    """Check every job as one planned batch of `problems` (jobs may be produced while
    checking goes on); `on_result` gets each verdict, one call at a time. It raises what
    stops a prover's checker (the prover is missing) or `on_result`, once the attempts
    sent are done; the jobs after it are not sent, and nothing more is recorded. A
    problem of a prover proofeval cannot check is an InputError before anything runs."""
    problems = list(problems)
    registry.refuse_unchecked(problems)
    failures: list[BaseException] = []
    lock = threading.Lock()
    directories = {Path(p.directory) for p in problems if p.directory}  # contexts load there

    def record(job: Job, future: Future[Outcome]) -> None:
        with lock:
            if failures or future.cancelled():
                return
            try:
                on_result(job.attempt, future.result())
            except BaseException as exc:  # raised below, once the engine has closed
                failures.append(exc)

    engine = Engine(settings, read_only=directories, warm=warm, on_event=on_event, remote=remote)
    try:
        engine.plan(problems)
        for job in jobs:
            if failures:
                break
            future = engine.submit(job, raises=True)
            future.add_done_callback(lambda f, j=job: record(j, f))
        engine.close()
    except BaseException:  # interrupted: what finished is recorded, the rest is not run
        engine.abort()
        raise
    if failures:
        raise failures[0]
