"""`proofeval run`: generation and checking as one stream, resumable from the run store.

A background thread asks the model for what the store lacks; each completion is
recorded, its proof extracted, and handed to the checker as it arrives, so generation
and checking overlap. Attempts generated earlier but not yet checked go first.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from proofeval.checking.engine import check_all
from proofeval.console import say
from proofeval.generate.client import Generator, SamplingSettings
from proofeval.loaders import Selection, load_benchmark
from proofeval.model import Attempt, Generation, Outcome, Problem
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.provers.registry import supported
from proofeval.report.table import write_results_csv
from proofeval.runs import manifest
from proofeval.runs.check import ROUTINE, log_event, record_provers
from proofeval.runs.generate import (
    ANSWERS_FILE,
    Extraction,
    Request,
    missing_requests,
    write_answers,
)
from proofeval.runs.no_proof import NoProof, asks_for_a_block
from proofeval.store import ResultRow, RunStore
from proofeval.timeouts import DEFAULT_TIMEOUT, TimeoutPolicy, load_policy, policy_files

_DONE = object()


@dataclass(frozen=True)
class RunOptions:
    problems: Path
    out: Path
    sampling: SamplingSettings
    template: str | None = None
    extraction: Extraction = Extraction()
    timeout: float = DEFAULT_TIMEOUT
    timeout_map: Path | None = None
    timeouts: Path | None = None
    settings: CheckSettings = CheckSettings()
    command: tuple[str, ...] = ()  # the command line's arguments, for the record
    selection: Selection = Selection()  # --only, --limit
    # how answers are asked for beyond one prompt: manifest.repair(), manifest.agent()
    procedure: dict[str, object] = field(default_factory=dict)


class Progress:
    """One bar of checked attempts, with the generated and solved counts beside it."""

    def __init__(self, total: int) -> None:
        self.bar = tqdm(total=total, unit="attempt", desc="checking", file=sys.stderr)
        self.lock = threading.Lock()
        self.generated = self.solved = self.retried = 0

    def on_generated(self) -> None:
        with self.lock:
            self.generated += 1
            self._show()

    def on_checked(self, outcome: Outcome) -> None:
        with self.lock:
            self.solved += outcome.verdict == "OK"
            self.bar.update()
            self._show()

    def on_retry(self, _cause: str) -> None:
        with self.lock:
            self.retried += 1
            self._show()

    def _show(self) -> None:
        shown = {"generated": self.generated, "solved": self.solved}
        if self.retried:  # the endpoint's trouble: 429s, 5xx, lost connections, retried
            shown["retried"] = self.retried
        self.bar.set_postfix(shown, refresh=True)

    def close(self) -> None:
        self.bar.close()


class Pipeline:
    """Completions in from the model thread, checker jobs out to the checker."""

    def __init__(self, opts: RunOptions, store: RunStore, problems: list[Problem]) -> None:
        self.opts = opts
        self.store = store
        self.problems = {p.id: p for p in problems}
        self.policy: TimeoutPolicy = load_policy(
            opts.problems, opts.timeout_map, opts.timeouts, opts.timeout
        )
        self.arrivals: queue.Queue = queue.Queue()
        self.generator = Generator(opts.sampling)
        self.failure: BaseException | None = None
        self.no_proof = NoProof(asks_for_a_block(opts.template), self.problems)

    def generate(self, requests: list[Request], progress: Progress) -> None:
        def arrived(gen: Generation) -> None:
            attempt = self.opts.extraction.attempt(gen, self.problems[gen.problem_id])
            self.store.record_generation(gen)
            self.store.add_attempts([attempt])
            progress.on_generated()
            self.arrivals.put(attempt)

        try:
            self.generator.generate(requests, arrived)
        except BaseException as exc:  # reported by run_pipeline(); what arrived is checked
            self.failure = exc
        finally:
            self.arrivals.put(_DONE)

    def jobs(self, earlier: list[Attempt]) -> Iterator[Job]:
        for attempt in earlier:
            yield from self._jobs(attempt)
        while (attempt := self.arrivals.get()) is not _DONE:
            yield from self._jobs(attempt)

    def _jobs(self, attempt: Attempt) -> Iterator[Job]:
        """The attempt's job, then its problem's probe if a block-less reply needs one."""
        yield self._job(attempt)
        probe = self.no_proof.probe(attempt)
        if probe is not None:
            yield self._job(probe)

    def _job(self, attempt: Attempt) -> Job:
        problem = self.problems[attempt.problem_id]
        return Job(attempt, problem, self.policy.for_problem(problem))


def run_pipeline(opts: RunOptions, warm: dict[str, SharedProcess] | None = None) -> list[ResultRow]:
    """Generate what the store lacks and check every unchecked attempt; the result rows.
    `warm`: a ready process per prover to reuse (tests reuse one HOL Light core)."""
    bench = load_benchmark(opts.problems, opts.selection)
    problems = [p for p in bench.problems if p.prover in supported()]
    for prover in sorted({p.prover for p in bench.problems} - supported()):
        say(f"warning: no checker for prover {prover!r} yet: its problems are left out")
    store = RunStore(opts.out)
    try:
        _begin(store, opts, problems)
        store.add_problems(problems)
        pipeline = Pipeline(opts, store, problems)
        earlier = _earlier_attempts(store, pipeline.problems, opts.extraction)
        have = {(a.problem_id, a.index) for a in earlier}
        requests = missing_requests(problems, have, opts.sampling.samples, opts.template)
        unchecked = store.pending(earlier)
        _say_resumed(len(earlier), len(unchecked))
        if requests:  # before any prover starts: minutes saved when the endpoint is wrong
            pipeline.generator.preflight()
        if requests or unchecked:
            _stream(pipeline, requests, unchecked, warm)
        if pipeline.generator.retried:
            store.set_info("retried_requests", pipeline.generator.retried)
        rows = store.results()
        generations = [g for g in store.generations() if g.problem_id in pipeline.problems]
        manifest.end(store)
    finally:
        store.close()
    record_provers(opts.out, problems, opts.settings)
    write_results_csv(rows, opts.out / "results.csv")
    verdicts = {(r.problem_id, r.attempt): r.verdict for r in rows}
    write_answers(
        opts.out / ANSWERS_FILE, generations, pipeline.problems, opts.extraction, verdicts
    )
    if pipeline.failure is not None:
        raise pipeline.failure
    return rows


def _begin(store: RunStore, opts: RunOptions, problems: list[Problem]) -> None:
    """Record what produces the run, or refuse a resume that would mix settings."""
    manifest.begin(store, *recorded(opts, problems))


def recorded(opts: RunOptions, problems: list[Problem]) -> tuple[dict, dict]:
    """The run's identity and provenance (runs/manifest.py)."""
    extraction = (opts.extraction.block, opts.extraction.marker)
    files = policy_files(opts.problems, opts.timeout_map, opts.timeouts)
    wanted = manifest.identity(
        opts.sampling, opts.template, extraction, (opts.timeout, *files), opts.settings,
        problems, opts.procedure,
    )  # fmt: skip
    return wanted, manifest.provenance(problems, opts.settings, opts.command)


def _stream(
    pipeline: Pipeline,
    requests: list[Request],
    unchecked: list[Attempt],
    warm: dict[str, SharedProcess] | None,
) -> None:
    total = len(unchecked) + sum(len(samples) for _, _, samples in requests)
    progress = Progress(total)
    pipeline.generator.on_retry = progress.on_retry
    producer = threading.Thread(target=pipeline.generate, args=(requests, progress))
    producer.start()

    def record(attempt: Attempt, outcome: Outcome) -> None:
        for settled, verdict in pipeline.no_proof.settle(attempt, outcome):
            pipeline.store.record(settled, verdict)
            progress.on_checked(verdict)

    try:
        check_all(
            pipeline.jobs(unchecked),
            pipeline.problems.values(),
            pipeline.opts.settings,
            record,
            lambda message: _event(pipeline.store, message),
            warm,
        )
    finally:
        pipeline.generator.cancel()  # the checker failed or was interrupted: stop asking
        producer.join()
        progress.close()


def _event(store: RunStore, message: str) -> None:
    say(message)
    if not message.startswith(ROUTINE):
        log_event(store, message)


def _earlier_attempts(
    store: RunStore, problems: dict[str, Problem], extraction: Extraction
) -> list[Attempt]:
    """The attempts of completions already in the store, extracted with today's options
    (an attempt whose proof comes out differently loses its verdict)."""
    attempts = [
        extraction.attempt(g, problems[g.problem_id])
        for g in store.generations()
        if g.problem_id in problems
    ]
    store.add_attempts(attempts)
    return attempts


def _say_resumed(generated: int, unchecked: int) -> None:
    if generated:
        say(
            f"resuming: {generated} completions already in the run, "
            f"{generated - unchecked} of them checked"
        )
