"""Checking on a Ray cluster (`pip install proofeval[ray]`).

One actor per node owns a proofeval.Checker: that node's warm prover processes. The
driver keeps the queue, sends each attempt to a node that already has its context while
one has room (a context is loaded on as few nodes as keep them busy), and records each
verdict itself (the run store stays on the driver). A node lost mid-run has its
unanswered attempts sent to the others: each attempt gets exactly one verdict.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from proofeval.checking.checker import LocalChecker
from proofeval.checking.engine import check_all as engine_check_all
from proofeval.errors import InputError
from proofeval.model import Attempt, Outcome, Stage, Verdict
from proofeval.provers.interface import CheckSettings, EventCallback, Job, ResultCallback

try:
    import ray
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # the extra is not installed: say so when it is asked for
    ray = None

LOST = (RayActorError, ActorDiedError, ActorUnavailableError) if ray is not None else ()
WAIT = 0.02  # seconds between looks at new calls, lost nodes and closing while calls are out
# A call costs about 1.3 ms of CPU (the node's actor and the driver) whatever its size,
# measured on small Coq attempts, which take 3-50 ms. So a call carries several attempts,
# and a node has a second call waiting while the first one's answers travel back.
BATCH_PER_CPU = 8  # attempts per call, per core of the node
CALLS = 2  # full calls in flight per node: one being checked, one waiting there


class NodeChecker:
    """The actor on one node: a LocalChecker kept warm across calls."""

    def __init__(self, settings: CheckSettings, options: dict) -> None:
        self.checker = LocalChecker(settings, **options)

    def check(self, jobs: list[Job]) -> list[Outcome]:
        # the job's limit (the driver's timeout policy) travels as the problem's own
        return self.checker.check([(replace(j.problem, timeout=j.timeout), j.attempt.proof)
                                   for j in jobs])  # fmt: skip

    def close(self) -> None:
        self.checker.close()


@dataclass(eq=False)
class _Node:
    node_id: str
    actor: object
    capacity: int  # attempts in flight that keep it busy
    batch: int  # attempts per call at most
    contexts: set[str] = field(default_factory=set)
    calls: dict[object, tuple[str, list[Job]]] = field(default_factory=dict)  # by ref

    @property
    def load(self) -> int:
        return sum(len(jobs) for _key, jobs in self.calls.values())


class RayExecutor:
    """Sends jobs to one NodeChecker per alive node of the cluster at `address`.
    `options`: what each node's Checker gets (timeout, max_memory_mb, idle_seconds...)."""

    def __init__(
        self,
        address: str,
        settings: CheckSettings,
        on_event: EventCallback = lambda _msg: None,
        **options: object,
    ) -> None:
        if ray is None:
            raise InputError("--ray needs Ray: pip install 'proofeval[ray]'")
        self.on_event = on_event
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except ConnectionError as exc:
            raise InputError(f"no Ray cluster at {address}: {exc}") from None
        self._cond = threading.Condition()
        self._queue: deque[tuple[str, Job, ResultCallback]] = deque()
        self._nodes: list[_Node] = []
        self._callbacks: dict[Attempt, ResultCallback] = {}  # unanswered attempts
        self._closing = False
        for info in ray.nodes():
            cpus = int(info.get("Resources", {}).get("CPU", 0))
            if info.get("Alive") and cpus > 0:
                self._nodes.append(self._start(info["NodeID"], cpus, settings, options))
        if not self._nodes:
            raise InputError(f"the Ray cluster at {address} has no node with CPUs")
        on_event(f"checking on {len(self._nodes)} Ray nodes")
        self._thread = threading.Thread(target=self._drive, daemon=True)
        self._thread.start()

    @staticmethod
    def _start(node_id: str, cpus: int, settings: CheckSettings, options: dict) -> _Node:
        batch = BATCH_PER_CPU * cpus
        capacity = CALLS * batch
        actor_class = ray.remote(NodeChecker).options(
            num_cpus=0,  # its prover processes use the node's cores, not Ray's slots
            max_concurrency=capacity + 2,  # a thread per call in flight (>= 1 attempt each)
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        )
        actor = actor_class.remote(replace(settings, workers=cpus), options)
        return _Node(node_id, actor, capacity, batch)

    def submit(self, key: str, job: Job, on_result: ResultCallback) -> None:
        """Check `job` (of the context `key`); on_result is called once, from a driver
        thread."""
        with self._cond:
            self._queue.append((key, job, on_result))
            self._callbacks[job.attempt] = on_result
            self._send()  # now, not at the driver's next look
            self._cond.notify_all()

    def contexts(self) -> int:
        with self._cond:
            return sum(len(node.contexts) for node in self._nodes)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
        for node in self._nodes:
            try:
                ray.get(node.actor.close.remote(), timeout=120)
            except Exception:  # a node already gone has nothing to close
                pass
            ray.kill(node.actor)

    # --- the driver loop -----------------------------------------------------------------

    def _drive(self) -> None:
        while True:
            with self._cond:
                self._send()
                orphans = [] if self._nodes else list(self._queue)
                if orphans:
                    self._queue.clear()
                refs = [ref for node in self._nodes for ref in node.calls]
                if not refs and not orphans:
                    if self._closing and not self._queue:
                        return
                    self._cond.wait(WAIT)
                    continue
            lost = Outcome(Verdict.ERROR, Stage.CHECK, 0.0, "every Ray node was lost")
            for _key, job, _callback in orphans:
                self._answer(job.attempt, lost)
            if refs:
                # the first call to finish, then every other one finished by then
                done, rest = ray.wait(refs, num_returns=1, timeout=WAIT)
                if done and rest:
                    done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
                for ref in done:
                    self._collect(ref)

    def _send(self) -> None:
        """Send queued jobs to nodes with room, a context's jobs together (lock held)."""
        while self._queue and self._nodes:
            key = self._queue[0][0]
            node = self._route(key)
            if node is None:
                return
            jobs = [self._queue.popleft()[1]]
            while self._queue and self._queue[0][0] == key and len(jobs) < node.batch:
                jobs.append(self._queue.popleft()[1])
            node.contexts.add(key)
            node.calls[node.actor.check.remote(jobs)] = (key, jobs)

    def _route(self, key: str) -> _Node | None:
        """A node with room for a full call, one that has the context loaded if any has."""
        free = [n for n in self._nodes if n.load + n.batch <= n.capacity]
        if not free:
            return None
        warm = [n for n in free if key in n.contexts]
        return min(warm or free, key=lambda n: n.load)

    def _collect(self, ref: object) -> None:
        with self._cond:
            node = next((n for n in self._nodes if ref in n.calls), None)
        if node is None:
            return  # its node was lost: its jobs are queued again
        try:
            outcomes = ray.get(ref)
        except LOST:
            self._lose(node)  # this call's jobs too
            return
        except Exception as exc:  # not the attempts' fault, and not a lost node
            outcomes = f"checker failure: {type(exc).__name__}: {exc}"
        with self._cond:
            _key, jobs = node.calls.pop(ref)
        if isinstance(outcomes, str):
            outcomes = [Outcome(Verdict.ERROR, Stage.CHECK, 0.0, outcomes) for _ in jobs]
        for job, outcome in zip(jobs, outcomes, strict=True):
            self._answer(job.attempt, outcome)

    def _lose(self, node: _Node) -> None:
        """A node is gone: every job it had not answered goes back to the queue, first."""
        with self._cond:
            if node not in self._nodes:
                return
            self._nodes.remove(node)
            sent = [(key, job) for key, jobs in node.calls.values() for job in jobs]
            node.calls.clear()
            for key, job in reversed(sent):
                callback = self._callbacks.get(job.attempt)
                if callback is not None:
                    self._queue.appendleft((key, job, callback))
            self._cond.notify_all()
        self.on_event(f"a Ray node was lost; its {len(sent)} attempts go to the others")

    def _answer(self, attempt: Attempt, outcome: Outcome) -> None:
        with self._cond:
            callback = self._callbacks.pop(attempt, None)
        if callback is not None:  # None: answered already (never twice)
            callback(attempt, outcome)


def check_all(
    jobs: Iterable[Job],
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback,
    address: str,
) -> None:
    """The engine's check_all (checking/engine.py) with Ray's nodes as its executor: every
    job's verdict, through each node's Checker, recorded by `on_result` in this process (a
    failure to record stops the run, as it does on one machine)."""
    jobs = list(jobs)
    # where contexts load files from: the same paths on every node (a shared file system)
    directories = sorted({Path(j.problem.directory) for j in jobs if j.problem.directory})
    executor = RayExecutor(address, settings, on_event, read_only=directories)
    engine_check_all(jobs, [], settings, on_result, on_event, remote=executor)


def on_cluster(address: str):
    """check_all on the Ray cluster at `address`, as a run's remote check."""
    return functools.partial(check_all, address=address)
