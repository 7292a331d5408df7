"""`proofeval check`: check every attempt of a benchmark into a resumable run directory."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from proofeval.answers import read_answers
from proofeval.errors import InputError
from proofeval.model import Attempt, Outcome, Problem
from proofeval.provers.interface import CheckSettings, Job
from proofeval.provers.registry import check_all, supported
from proofeval.report.official_csv import write_official_csv
from proofeval.report.table import category_table, format_table, write_results_csv
from proofeval.store import ResultRow, RunStore
from proofeval.suites import load_benchmark
from proofeval.timeouts import load_policy


@dataclass(frozen=True)
class CheckOptions:
    problems: Path
    out: Path
    answers: Path | None = None
    timeout: float = 120.0
    timeout_map: Path | None = None
    timeouts: Path | None = None
    official_csv: Path | None = None
    reference: bool = False
    settings: CheckSettings = CheckSettings()
    ray: str | None = None  # the address of a Ray cluster to check on


def say(message: str) -> None:
    tqdm.write(f"proofeval: {message}", file=sys.stderr)


def _attempts(opts: CheckOptions, problems: dict[str, Problem], shipped: list[Attempt]):
    if opts.reference:
        refs = [
            Attempt(p.id, 0, p.reference, p.reference) for p in problems.values() if p.reference
        ]
        if not refs:
            raise InputError(f"{opts.problems} has no reference proofs")
        return refs
    if opts.answers is None:
        if not shipped:
            raise InputError(f"{opts.problems} has no answer.txt files: give --answers FILE")
        return shipped
    attempts, warnings = read_answers(opts.answers, set(problems))
    for warning in warnings:
        say(f"warning: {warning}")
    if not attempts:
        raise InputError(f"{opts.answers} has no answers for the problems in {opts.problems}")
    return attempts


def _jobs(opts: CheckOptions, problems: dict[str, Problem], pending: list[Attempt]) -> list[Job]:
    policy = load_policy(opts.problems, opts.timeout_map, opts.timeouts, opts.timeout)
    jobs, unsupported = [], set()
    for attempt in pending:
        problem = problems[attempt.problem_id]
        if problem.prover in supported():
            jobs.append(Job(attempt, problem, policy.for_problem(problem)))
        else:
            unsupported.add(problem.prover)
    for prover in sorted(unsupported):
        say(f"warning: no checker for prover {prover!r} yet: its attempts stay unchecked")
    return jobs


def run_check(opts: CheckOptions, warm: dict[str, object] | None = None) -> list[ResultRow]:
    """Check what the run directory lacks, then write results.csv; the result rows.
    `warm`: a ready process per prover to reuse (tests reuse one HOL Light core)."""
    bench = load_benchmark(opts.problems)
    problems = {p.id: p for p in bench.problems}
    attempts = _attempts(opts, problems, bench.answers)
    store = RunStore(opts.out)
    try:
        store.add_problems(bench.problems)
        store.add_attempts(attempts)
        jobs = _jobs(opts, problems, store.pending(attempts))
        if len(jobs) < len(attempts):
            say(f"{len(attempts) - len(jobs)} of {len(attempts)} attempts already checked")
        check_jobs(jobs, store, opts.settings, warm, opts.ray)
        rows = store.results()
    finally:
        store.close()
    write_results_csv(rows, opts.out / "results.csv")
    if opts.official_csv is not None:
        write_official_csv(rows, opts.official_csv)
    return rows


def check_jobs(
    jobs: list[Job],
    store: RunStore,
    settings: CheckSettings,
    warm: dict[str, object] | None,
    ray: str | None = None,
) -> None:
    """Check `jobs` with their problems' provers into `store`, with a progress bar; on
    the nodes of the Ray cluster at `ray` when given (the store stays here)."""
    if not jobs:
        return
    if not settings.replay:
        say("the kernel replay is off (--replay off): a HOL Light OK is not replayed, and says so")
    with tqdm(total=len(jobs), unit="attempt", desc="checking", file=sys.stderr) as bar:
        solved = 0

        def record(attempt: Attempt, outcome: Outcome) -> None:
            nonlocal solved
            store.record(attempt, outcome)
            solved += outcome.verdict == "OK"
            bar.set_postfix(ok=solved, refresh=False)
            bar.update()

        if ray is not None:
            from proofeval import ray_executor

            ray_executor.check_all(jobs, settings, record, say, ray)
            return
        problems = {j.problem.id: j.problem for j in jobs}.values()
        check_all(jobs, problems, settings, record, say, warm)


def check_and_print(opts: CheckOptions) -> int:
    """What `check` and `demo` do: check, print the paper table, say where results are."""
    print(format_table(category_table(run_check(opts))))
    say(f"results: {opts.out / 'results.csv'}")
    return 0
