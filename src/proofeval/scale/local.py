"""The checker behind proofeval.Checker: (problem, proof) pairs checked on this machine,
warm across calls (or on a remote executor such as Ray's, given by the caller).

Each context (a prover, a directory and a header, kept by their SHA-256) is one long-lived
run of that prover's checker (provers/interface.py), the same code `proofeval check`
runs, fed attempts as calls bring them. At most `settings.workers` attempts are checked
at a time, whatever the number of contexts. A context idle for `idle_seconds`, or the
least recently used idle one while the prover processes use more than `max_memory_mb`,
is closed; the next attempt on it loads it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import queue
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from proofeval.errors import InputError
from proofeval.generate.extract import extract as extract_proof
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.interface import CheckSettings, Job, ResultCallback, checker_failure
from proofeval.scale.memory import descendants_mb

Item = tuple[Problem, str]  # a problem and a proof of it (the proof, not a model's output)
TICK = 1.0  # seconds between looks at idle contexts and memory


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def context_key(problem: Problem) -> str:
    """What a warm context is for: the prover, the directory and the header."""
    return _digest(problem.prover, problem.directory, problem.header)


def problem(
    prover: str,
    statement: str,
    header: str = "",
    timeout: float | None = None,
    directory: str = "",
) -> Problem:
    """A problem given by its text; its id is derived from that text."""
    made = Problem(id="", statement=statement, prover=prover, header=header, timeout=timeout)
    return _identified(replace(made, directory=directory))


def _identified(p: Problem) -> Problem:
    """`p` under an id derived from everything that decides its verdict, so that two
    problems that differ can never share a registered goal, whatever ids callers give."""
    return replace(p, id="p" + _digest(context_key(p), p.statement)[:32])


@dataclass
class Stats:
    queued: int  # attempts waiting for a worker
    running: int
    contexts: int  # warm contexts kept
    memory_mb: float  # of every prover process, at the last look


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


class _Shared:
    """A prover's process that every context shares (HOL Light's core), started in a
    thread that lives as long as the Checker: the sandbox dies with the thread that
    started it."""

    def __init__(
        self, prover: str, settings: CheckSettings, read_only: list[Path], given: object, on_event
    ) -> None:
        self.on_event = on_event
        self.ready = threading.Event()
        self.process = given
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if given is None and prover in registry.WARM_STARTERS:
            args = (prover, settings, read_only)
            self._thread = threading.Thread(target=self._run, args=args, daemon=True)
            self._thread.start()
        else:
            self.ready.set()

    def _run(self, prover: str, settings: CheckSettings, read_only: list[Path]) -> None:
        self.on_event(f"starting {prover} (HOL Light's core: minutes)")
        try:
            warm = registry.start_warm(prover, settings, read_only)
        except BaseException as exc:  # every context of this prover gives it as its ERROR
            self.on_event(f"{prover} did not start: {exc}")
            self.error = exc
            self.ready.set()
            return
        assert warm is not None
        self.on_event(f"{prover} is ready")
        self.process = warm.process
        self.ready.set()
        self._stop.wait()
        warm.close()

    def get(self) -> object:
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
    """One context's long-lived run of its prover's checker, in a thread of its own."""

    key: str
    prover: str
    jobs: queue.Queue = field(default_factory=queue.Queue)
    tasks: dict[Attempt, _Task] = field(default_factory=dict)  # sent, not answered yet
    last_used: float = field(default_factory=time.monotonic)
    ended: bool = False
    thread: threading.Thread | None = None

    def stream(self):
        while (job := self.jobs.get()) is not None:
            yield job


class LocalChecker:
    """Checks batches of (problem, proof) with the verdicts, stages and messages of
    `proofeval check`, keeping warm contexts across calls. Use it as a context manager.

    settings: workers (attempts checked at a time), memory limit per attempt, sandbox...
    timeout: seconds per attempt when neither the problem nor the call names a limit.
    max_memory_mb: close least recently used idle contexts while the prover processes
    use more (None: no budget). idle_seconds: close a context unused that long.
    read_only: directories that problems' `directory` may name (HOL Light's sandbox is
    set when it starts). warm: a ready shared process per prover to reuse (tests).
    remote: where attempts are checked instead of this machine's provers."""

    def __init__(
        self,
        settings: CheckSettings | None = None,
        *,
        timeout: float = 60.0,
        max_memory_mb: float | None = None,
        idle_seconds: float = 600.0,
        read_only: Iterable[Path] = (),
        warm: Mapping[str, object] | None = None,
        on_event=None,
        remote: Remote | None = None,
    ) -> None:
        self.settings = settings or CheckSettings()
        self.timeout = timeout
        self.max_memory_mb = max_memory_mb
        self.idle_seconds = idle_seconds
        self.on_event = on_event or (lambda _msg: None)
        self._read_only = list(read_only)
        self._given = dict(warm or {})
        self._shared: dict[str, _Shared] = {}
        self._cond = threading.Condition()
        self._queue: deque[_Task] = deque()
        self._lanes: OrderedDict[str, _Lane] = OrderedDict()  # least recently used first
        self._running = 0
        self._closing = False
        self._memory_mb = 0.0
        self._counter = itertools.count()
        self._remote = remote
        self._threads = [
            threading.Thread(target=self._dispatch, daemon=True),
            threading.Thread(target=self._maintain, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def __enter__(self) -> LocalChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- calls ---------------------------------------------------------------------------

    def check(
        self, items: Iterable[Item], timeout: float | None = None, extract: bool = False
    ) -> list[Outcome]:
        """One outcome per item, in order. `timeout`: seconds per attempt of this call
        for problems that name none. `extract`: the proofs are a model's raw output, to
        extract as `proofeval check` does (the last fenced block, a restated statement
        dropped)."""
        return [f.result() for f in self.submit(items, timeout, extract)]

    async def acheck(
        self, items: Iterable[Item], timeout: float | None = None, extract: bool = False
    ) -> list[Outcome]:
        """check() for asyncio; cancelling it drops the attempts not started yet."""
        futures = self.submit(items, timeout, extract)
        try:
            return list(await asyncio.gather(*map(asyncio.wrap_future, futures)))
        finally:
            for f in futures:
                f.cancel()  # a no-op for those started or done

    def submit(
        self, items: Iterable[Item], timeout: float | None = None, extract: bool = False
    ) -> list[Future[Outcome]]:
        """Queue every item; one future per item. An item whose prover proofeval cannot
        check (unknown, misspelt, or without a checker) gets an ERROR that says so."""
        tasks = [self._task(p, proof, timeout, extract) for p, proof in _pairs(items)]
        with self._cond:
            if self._closing:
                raise InputError("this Checker is closed")
            self._queue.extend(t for t in tasks if not t.future.done())
            self._cond.notify_all()
        return [t.future for t in tasks]

    def _task(self, given: Problem, proof: str, timeout: float | None, extract: bool) -> _Task:
        p = _identified(given)
        output = proof
        if extract:
            proof = extract_proof(output, p.prover, statement=p.statement)
        attempt = Attempt(p.id, next(self._counter), output, proof)
        limit = p.timeout or timeout or self.timeout
        task = _Task(context_key(p), Job(attempt, p, limit), Future())
        refusal = registry.check_error(p.prover)
        if refusal is not None:  # one ERROR for this item, never the whole batch lost
            task.future.set_running_or_notify_cancel()
            task.future.set_result(Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, refusal))
        return task

    def warm_up(self, provers: Iterable[str] = ("hol-light",)) -> dict[str, str]:
        """Start the shared processes of `provers` now (HOL Light: minutes); what failed,
        by prover. On a remote executor (Ray), each node starts its own when first needed."""
        failures: dict[str, str] = {}
        for prover in provers if self._remote is None else ():
            try:
                self._shared_of(prover).get()
            except Exception as exc:
                failures[prover] = checker_failure(exc).message
        return failures

    def warm_process(self, prover: str) -> object:
        """`prover`'s shared process on this machine (HOL Light's loaded core), started
        if need be; what else uses it (proof states) forks it."""
        if self._remote is not None:
            raise InputError("proof states need the provers on this machine, not on Ray")
        return self._shared_of(prover).get()

    def stats(self) -> Stats:
        with self._cond:
            queued = sum(not t.future.cancelled() for t in self._queue)
            contexts = len(self._lanes) if self._remote is None else self._remote.contexts()
            return Stats(queued, self._running, contexts, self._memory_mb)

    def close(self) -> None:
        """Finish what was submitted, then stop every prover process."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            while self._queue or self._running:
                self._cond.wait()
            lanes = list(self._lanes.values())
            for lane in lanes:
                self._end(lane)
        for thread in self._threads:
            thread.join()
        for lane in lanes:
            if lane.thread is not None:
                lane.thread.join()
        for shared in self._shared.values():
            shared.close()
        if self._remote is not None:
            self._remote.close()

    # --- dispatching ---------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Send queued attempts to their contexts, at most `workers` at a time."""
        # A remote executor (Ray's nodes) bounds the attempts in flight itself.
        workers = max(1, self.settings.workers) if self._remote is None else math.inf
        with self._cond:
            while True:
                while not self._queue or self._running >= workers:
                    if self._closing and not self._queue:
                        return
                    self._cond.wait()
                task = self._queue.popleft()
                if not task.future.set_running_or_notify_cancel():
                    continue  # its caller went away before it started
                self._running += 1
                if self._remote is not None:
                    answer = lambda _a, o, t=task: self._finish(t, o)  # noqa: E731
                    self._remote.submit(task.key, task.job, answer)
                    continue
                lane = self._lane(task)
                lane.tasks[task.job.attempt] = task
                lane.jobs.put(task.job)

    def _lane(self, task: _Task) -> _Lane:
        lane = self._lanes.get(task.key)
        if lane is None:
            lane = self._lanes[task.key] = _Lane(task.key, task.job.problem.prover)
            lane.thread = threading.Thread(target=self._run_lane, args=(lane,), daemon=True)
            lane.thread.start()
        self._lanes.move_to_end(task.key)
        lane.last_used = time.monotonic()
        return lane

    def _run_lane(self, lane: _Lane) -> None:
        failure: Outcome | None = None
        try:
            warm = self._shared_of(lane.prover).get()
            answer = lambda a, o: self._answer(lane, a, o)  # noqa: E731
            checker = registry.make_checker(lane.prover, self.settings, answer, self.on_event, warm)
            checker.run(lane.stream(), [])
        except BaseException as exc:  # the attempts of this context get it as their ERROR
            failure = checker_failure(exc)
        with self._cond:
            self._end(lane)
            left = list(lane.tasks)
        for attempt in left:
            why = failure or Outcome(Verdict.ERROR, Stage.CHECK, 0.0, "the checker stopped")
            self._answer(lane, attempt, why)

    def _answer(self, lane: _Lane, attempt: Attempt, outcome: Outcome) -> None:
        with self._cond:
            task = lane.tasks.pop(attempt, None)
            if task is None:
                return
            lane.last_used = time.monotonic()
        self._finish(task, outcome)

    def _finish(self, task: _Task, outcome: Outcome) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()
        task.future.set_result(fence_hint(task.job.attempt.proof, outcome))

    def _end(self, lane: _Lane) -> None:
        """Close a context (called with the lock held): no attempt is sent to it again."""
        if not lane.ended:
            lane.ended = True
            lane.jobs.put(None)
        if self._lanes.get(lane.key) is lane:
            del self._lanes[lane.key]

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
                if self._closing and not self._queue and not self._running:
                    return
            self._memory_mb = descendants_mb()
            self._evict_idle()
            self._evict_for_memory()
            time.sleep(TICK)

    def _idle(self) -> list[_Lane]:
        return [lane for lane in self._lanes.values() if not lane.tasks]

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


_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
FENCE_HINT = (
    "the proof still holds a ``` fence, as a model's raw output does: check it with "
    'extract=True (the service: "extract": true), or send the proof alone; '
)


def fence_hint(proof: str, outcome: Outcome) -> Outcome:
    """`outcome`, its message saying to extract when a precheck ERROR is on text that
    still holds a Markdown fence (raw model output sent as a proof)."""
    if outcome.verdict is Verdict.ERROR and outcome.stage is Stage.PRECHECK:
        if _FENCE.search(proof):
            return replace(outcome, message=FENCE_HINT + outcome.message)  # first: kept whole
    return outcome


def _pairs(items: Iterable[Item]) -> list[Item]:
    pairs = []
    for item in items:
        if not (isinstance(item, Sequence) and len(item) == 2):
            raise InputError("each item is a (problem, proof) pair")
        p, proof = item
        if not isinstance(p, Problem) or not isinstance(proof, str):
            raise InputError("each item is a (Problem, str) pair")
        pairs.append((p, proof))
    return pairs
