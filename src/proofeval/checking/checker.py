"""The checker behind proofeval.Checker: (problem, proof) items checked through the one
engine (engine.py), warm across calls, with the verdicts, stages and messages of
`proofeval check`: the same time limits (timeouts.py), the same extraction of a proof
from a model's output (generate/extract.py)."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from proofeval.checking.engine import Engine, Remote, Stats, context_key, digest
from proofeval.errors import InputError
from proofeval.generate.extract import extract as extract_proof
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings, EventCallback, Job, checker_failure
from proofeval.timeouts import DEFAULT_TIMEOUT, TimeoutPolicy

Item = tuple[Problem, str]  # a problem and a proof of it (the proof, not a model's output)


def problem(
    prover: str,
    statement: str,
    header: str = "",
    timeout: float | None = None,
    directory: str = "",
) -> Problem:
    """A problem given by its text; its id is derived from that text."""
    name = registry.canonical(prover)
    made = Problem(id="", statement=statement, prover=name, header=header, timeout=timeout)
    return _identified(replace(made, directory=directory))


def _identified(p: Problem) -> Problem:
    """`p` under an id derived from everything that decides its verdict, so that two
    problems that differ can never share a registered goal, whatever ids callers give."""
    return replace(p, id="p" + digest(context_key(p), p.statement)[:32])


class LocalChecker:
    """Checks batches of (problem, proof) with the verdicts, stages and messages of
    `proofeval check`, keeping warm contexts across calls. Use it as a context manager.

    settings: workers (attempts of each prover checked at a time), memory limit per
    attempt, sandbox...
    timeout: seconds per attempt when neither the problem nor the call names a limit.
    max_memory_mb: close least recently used idle contexts while the prover processes
    use more (None: no budget). idle_seconds: close a context unused that long.
    read_only: directories that problems' `directory` may name (HOL Light's sandbox is
    set when it starts). warm: a started shared process per prover to reuse (tests).
    remote: where attempts are checked instead of this machine's provers."""

    def __init__(
        self,
        settings: CheckSettings | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_memory_mb: float | None = None,
        idle_seconds: float = 600.0,
        read_only: Iterable[Path] = (),
        warm: Mapping[str, SharedProcess] | None = None,
        on_event: EventCallback | None = None,
        remote: Remote | None = None,
    ) -> None:
        self.settings = settings or CheckSettings()
        self.timeout = timeout
        self.engine = Engine(
            self.settings,
            max_memory_mb=max_memory_mb,
            idle_seconds=idle_seconds,
            read_only=read_only,
            warm=warm,
            on_event=on_event,
            remote=remote,
        )
        self._remote = remote
        self._counter = itertools.count()

    def __enter__(self) -> LocalChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

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
        policy = TimeoutPolicy(default=timeout or self.timeout)
        jobs = [self._job(p, proof, policy, extract) for p, proof in _pairs(items)]
        return [_hinted(self.engine.submit(job), job.attempt.proof) for job in jobs]

    def _job(self, given: Problem, proof: str, policy: TimeoutPolicy, extract: bool) -> Job:
        p = _identified(replace(given, prover=registry.canonical(given.prover)))
        output = proof
        if extract:
            proof = extract_proof(output, p.prover, statement=p.statement)
        attempt = Attempt(p.id, next(self._counter), output, proof)
        return Job(attempt, p, policy.for_problem(p))

    @property
    def max_memory_mb(self) -> float | None:
        return self.engine.max_memory_mb

    @max_memory_mb.setter
    def max_memory_mb(self, value: float | None) -> None:
        self.engine.max_memory_mb = value

    def warm_up(self, provers: Iterable[str] = ("hol-light",)) -> dict[str, str]:
        """Start the shared processes of `provers` now (HOL Light: minutes); what failed,
        by prover. On a remote executor (Ray), each node starts its own when first needed."""
        failures: dict[str, str] = {}
        for prover in provers if self._remote is None else ():
            try:
                self.engine.shared_process(prover)
            except Exception as exc:
                failures[prover] = checker_failure(exc).message
        return failures

    def warm_process(self, prover: str) -> SharedProcess | None:
        """`prover`'s shared process on this machine (HOL Light's loaded core), started
        if need be; what else uses it (proof states) forks it."""
        return self.engine.shared_process(prover)

    def stats(self) -> Stats:
        return self.engine.stats()

    def close(self) -> None:
        """Finish what was submitted, then stop every prover process."""
        self.engine.close()


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


def _hinted(future: Future[Outcome], proof: str) -> Future[Outcome]:
    """A future of `future`'s outcome with the fence hint; cancelling it cancels `future`."""
    hinted: Future[Outcome] = Future()

    def copy(done: Future[Outcome]) -> None:
        if done.cancelled():
            hinted.cancel()
        elif hinted.set_running_or_notify_cancel():
            hinted.set_result(fence_hint(proof, done.result()))

    future.add_done_callback(copy)
    hinted.add_done_callback(lambda f: future.cancel() if f.cancelled() else None)
    return hinted


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
