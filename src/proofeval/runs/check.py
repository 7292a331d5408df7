"""`proofeval check`: check every attempt of a benchmark into a resumable run directory."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from proofeval.checking.engine import check_all
from proofeval.console import say
from proofeval.errors import InputError
from proofeval.files import write_text_atomically
from proofeval.generate.extract import extract
from proofeval.loaders import Benchmark, Selection, load_benchmark, skipped_summary
from proofeval.loaders.answers import read_answers, unknown_summary
from proofeval.metrics import compute
from proofeval.model import Attempt, Outcome, Problem, one_line
from proofeval.provers import registry
from proofeval.provers.backend import Shared, SharedProcess
from proofeval.provers.interface import CheckSettings, EventCallback, Job, ResultCallback
from proofeval.provers.registry import benchmark_warnings
from proofeval.report.feedback_jsonl import FEEDBACK_FILE, write_feedback_jsonl
from proofeval.report.official_csv import write_official_csv
from proofeval.report.table import category_table, format_table, write_results_csv
from proofeval.report.terminal import unevaluated_line
from proofeval.states.explain import explain_failures, unexplained
from proofeval.store import ResultRow, RunStore
from proofeval.timeouts import DEFAULT_TIMEOUT, TimeoutPolicy, load_policy

# checks jobs somewhere else than this machine's provers, each verdict to the callback
RemoteCheck = Callable[[list[Job], CheckSettings, ResultCallback, EventCallback], None]


@dataclass(frozen=True)
class CheckOptions:
    problems: Path
    out: Path
    answers: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    timeout_map: Path | None = None
    timeouts: Path | None = None
    official_csv: Path | None = None
    reference: bool = False
    settings: CheckSettings = CheckSettings()
    remote: RemoteCheck | None = None  # checks the jobs elsewhere (on_cluster: Ray)
    selection: Selection = Selection()
    allow_unknown: bool = False  # answers for ids the benchmark lacks: a warning, not an error
    feedback: bool = False  # each FAIL's goals, through proof states, after checking


# Progress events that start a context: counted in the progress bar, not printed.
ROUTINE = ("starting coqtop for a header", "loading the context")


def _attempts(opts: CheckOptions, bench: Benchmark) -> list[Attempt]:
    problems = {p.id: p for p in bench.problems}
    if opts.reference:
        refs = [
            Attempt(p.id, 0, p.reference, p.reference) for p in problems.values() if p.reference
        ]
        if not refs:
            raise InputError(f"{opts.problems} has no reference proofs")
        return refs
    if opts.answers is None:
        if not bench.answers:
            raise InputError(f"{opts.problems} has no answer.txt files: give --answers FILE")
        return bench.answers
    read = read_answers(opts.answers, set(problems), bench.unselected)
    if read.left_out:
        n = read.left_out
        say(f"{n} answer{'s are' if n != 1 else ' is'} for problems --only leaves out: not checked")
    if read.unknown:
        summary = unknown_summary(opts.answers, read.unknown, [*problems, *bench.unselected])
        if not opts.allow_unknown:
            raise InputError(
                f"{summary}; fix the ids, or give --allow-unknown to check the others anyway"
            )
        say(f"warning: {summary}; not checked")
    if not read.attempts:
        raise InputError(f"{opts.answers} has no answers for the problems in {opts.problems}")
    return [_extracted(a, problems[a.problem_id]) for a in read.attempts]


def _extracted(attempt: Attempt, problem: Problem) -> Attempt:
    """`attempt` with its proof extracted for its problem's prover, as the API's
    `extract=True` does: for Coq and Lean, a restated statement is dropped (the
    benchmark's own is the one checked)."""
    proof = extract(attempt.proof, problem.prover, statement=problem.statement)
    return replace(attempt, proof=proof)


def _policy(opts: CheckOptions) -> TimeoutPolicy:
    return load_policy(opts.problems, opts.timeout_map, opts.timeouts, opts.timeout)


def _jobs(opts: CheckOptions, problems: dict[str, Problem], pending: list[Attempt]) -> list[Job]:
    policy = _policy(opts)
    return [
        Job(attempt, problems[attempt.problem_id], policy.for_problem(problems[attempt.problem_id]))
        for attempt in pending
    ]


def run_check(opts: CheckOptions, warm: dict[str, SharedProcess] | None = None) -> list[ResultRow]:
    """Check what the run directory lacks, then write results.csv; the result rows.
    `warm`: a ready process per prover to reuse (tests reuse one HOL Light core)."""
    return checked(opts, warm)[1]


def checked(
    opts: CheckOptions, warm: dict[str, SharedProcess] | None = None
) -> tuple[Benchmark, list[ResultRow]]:
    """run_check(), also giving the benchmark checked."""
    bench = load_benchmark(opts.problems, opts.selection)
    skipped = skipped_summary(bench)
    if skipped is not None:
        say(f"warning: {skipped}")
    problems = {p.id: p for p in bench.problems}
    for warning in benchmark_warnings(bench.problems):
        say(f"warning: {warning}")
    attempts = _attempts(opts, bench)
    registry.refuse_unchecked([problems[a.problem_id] for a in attempts])
    if opts.feedback and opts.remote is not None:
        raise InputError("--feedback on needs this machine's provers: not with --ray")
    store = RunStore(opts.out)
    started: list[Shared] = []
    try:
        store.add_problems(bench.problems)
        store.add_attempts(attempts)
        jobs = _jobs(opts, problems, store.pending(attempts))
        if len(jobs) < len(attempts):
            say(f"{len(attempts) - len(jobs)} of {len(attempts)} attempts already checked")
        if opts.feedback:  # HOL Light's core is started only if a check or a FAIL needs it
            failed = [problems[a.problem_id] for a in unexplained(store, problems)]
            needed = [j.problem for j in jobs] + failed
            warm = _shared(opts, needed, list(problems.values()), warm, started)
        check_jobs(jobs, store, opts.settings, warm, opts.remote)
        if opts.feedback:
            _explain(opts, store, problems, warm or {})
        rows = store.results()
        feedback = store.all_feedback()
    finally:
        store.close()
        for process in started:
            process.close()
    record_provers(opts.out, bench.problems, opts.settings)
    write_results_csv(rows, opts.out / "results.csv")
    write_feedback_jsonl(rows, feedback, opts.out / FEEDBACK_FILE)
    if opts.official_csv is not None:
        write_official_csv(rows, opts.official_csv)
    return bench, rows


def _shared(
    opts: CheckOptions,
    needed: list[Problem],
    problems: list[Problem],
    warm: dict[str, SharedProcess] | None,
    started: list[Shared],
) -> dict[str, SharedProcess]:
    """`warm` with the shared process of each prover of `needed` that has one, started
    here when not given, so the checkers and then the feedback's proof states use the
    same one (HOL Light's core is loaded once); it reads the directories of `problems`.
    Started ones are added to `started`."""
    shared = dict(warm or {})
    directories = {Path(p.directory) for p in problems if p.directory}
    provers = {registry.canonical(p.prover) for p in needed}
    for prover in sorted(p for p in provers - set(shared) if registry.has_shared(p)):
        say(f"starting {prover} (checking, then feedback on its FAILs)")
        process = registry.start_shared(prover, opts.settings, directories)
        if process is not None:
            started.append(process)
            shared[prover] = process.process
    return shared


def _explain(
    opts: CheckOptions,
    store: RunStore,
    problems: dict[str, Problem],
    warm: dict[str, SharedProcess],
) -> None:
    policy = _policy(opts)
    kept = explain_failures(store, problems, opts.settings, warm, policy.for_problem, say)
    if kept:
        say(f"feedback on {kept} FAIL{'s' if kept != 1 else ''}: {opts.out / FEEDBACK_FILE}")


PROVERS_FILE = "provers.json"


def record_provers(out: Path, problems: list[Problem], settings: CheckSettings) -> None:
    """Say which exact provers checked the run, and keep it in RUN_DIR/provers.json."""
    versions = [system.description for system in registry.systems(problems, settings)]
    if versions:
        say(f"checked with {'; '.join(versions)}")
    document = json.dumps({"provers": versions}, indent=1) + "\n"
    write_text_atomically(out / PROVERS_FILE, document)


def check_jobs(
    jobs: list[Job],
    store: RunStore,
    settings: CheckSettings,
    warm: dict[str, SharedProcess] | None,
    remote: RemoteCheck | None = None,
) -> None:
    """Check `jobs` with their problems' provers into `store`, with a progress bar; by
    `remote` when given (the nodes of a Ray cluster; the store stays here)."""
    if not jobs:
        return
    if not settings.replay:
        say("the kernel replay is off (--replay off): a HOL Light OK is not replayed, and says so")
    with tqdm(total=len(jobs), unit="attempt", desc="checking", file=sys.stderr) as bar:
        counts = {"ok": 0, "contexts": 0}

        def record(attempt: Attempt, outcome: Outcome) -> None:
            store.record(attempt, outcome)
            counts["ok"] += outcome.verdict == "OK"
            bar.set_postfix(counts, refresh=False)
            bar.update()

        def event(message: str) -> None:
            # A context starting is routine (hundreds in a run): a count in the bar, not a
            # line each; anything else is news and gets its line above the bar.
            if message.startswith(ROUTINE):
                counts["contexts"] += 1
                bar.set_postfix(counts)
            else:
                say(message)
                log_event(store, message)

        if remote is not None:
            remote(jobs, settings, record, event)
            return
        problems = {j.problem.id: j.problem for j in jobs}.values()
        check_all(jobs, problems, settings, record, event, warm)


EVENTS_FILE = "events.txt"


def log_event(store: RunStore, message: str) -> None:
    """Keep a checker's news in the run directory (which compatibility rules a Coq run
    applied, what its library build compiled), one timestamped line each."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(store.path.parent / EVENTS_FILE, "a", encoding="utf-8") as log:
        log.write(f"{stamp} {one_line(message, 2000)}\n")


def check_and_print(opts: CheckOptions) -> int:
    """What `check` and `demo` do: check, print the paper table (every problem of the
    benchmark counted, those without a checked attempt as unsolved and named), say where
    results are."""
    bench, rows = checked(opts)
    print(format_table(category_table(rows, bench.problems)))
    metrics = compute(rows, bench.problems)
    if metrics.unevaluated:
        say(unevaluated_line(metrics))
    say(f"results: {opts.out / 'results.csv'}")
    return 0
