"""`proofeval baseline --method atp`: Why3's automatic provers on each VC of a benchmark
`build why3` wrote (NTP4VC's "ATP pass" column), through why3_tool.ml with an
Auto_level_3-shaped strategy over every installed prover and a per-VC time budget.

Each problem gets one attempt, whose verdict is OK when the provers closed the VC (the
message says which, `CVC5` or `CVC4+Z3` when a split's parts were closed by several) and
FAIL otherwise: stored, exported and reported like any run, with baseline.csv beside."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from proofeval.baselines.run import CSV_NAME, Solve, write_baseline_csv
from proofeval.builders import why3_tool
from proofeval.builders.why3_vcs import readable_source
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark, why3_vcs
from proofeval.model import Attempt, Outcome, Stage, Verdict
from proofeval.report.table import write_results_csv
from proofeval.store import ResultRow, RunStore

METHOD = "atp"
STRATEGIES = ("auto3", "flat")


@dataclass(frozen=True)
class AtpOptions:
    bench: Path
    out: Path
    budget: float = 10.0  # seconds of wall clock per VC
    strategy: str = "auto3"
    provers: tuple[str, ...] = ()  # default: every installed one


def attempt_text(opts: AtpOptions, provers: list[str]) -> str:
    """The attempt's text: what was run, so that another setting is not mixed in."""
    return f"(* atp: {opts.strategy}, {opts.budget:g} s per VC, {' '.join(provers)} *)"


def run_atp(opts: AtpOptions) -> list[Solve]:
    """Run the provers on what the run directory lacks; write results.csv and
    baseline.csv; the solves."""
    if opts.strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {opts.strategy!r} ({', '.join(STRATEGIES)})")
    if not why3_vcs.is_why3_vcs(opts.bench):
        raise InputError(f"{opts.bench}: the atp method needs a benchmark `build why3` wrote")
    manifest = why3_vcs.manifest(opts.bench)
    if manifest.get("generator", "why3") != "why3":
        raise InputError(
            f"{opts.bench}: the atp method runs on WhyML sources; this benchmark's VCs come "
            f"from {manifest['generator']} (run its provers through it instead)"
        )
    problems = {p.id: p for p in load_benchmark(opts.bench).problems}
    provers = _provers(opts.provers)
    text = attempt_text(opts, provers)
    attempts = {pid: Attempt(pid, 0, text, text) for pid in problems}
    store = RunStore(opts.out)
    try:
        _refuse_other_attempts(store, text, opts.out)
        store.add_problems(problems.values())
        store.add_attempts(attempts.values())
        pending = {a.problem_id for a in store.pending(attempts.values())}
        for source, entries in tqdm(_by_source(manifest, pending).items(), desc="atp", unit="file"):
            for pid, outcome in _prove(source, entries, manifest, opts, provers):
                store.record(attempts[pid], outcome)
        rows = store.results()
    finally:
        store.close()
    write_results_csv(rows, opts.out / "results.csv")
    solves = summarize(rows)
    write_baseline_csv(solves, opts.out / CSV_NAME)
    return solves


def _provers(asked: tuple[str, ...]) -> list[str]:
    installed = why3_tool.installed_provers()
    if not installed:
        raise InputError("no automatic prover is installed: run `make install`")
    missing = [p for p in asked if p not in installed]
    if missing:
        raise InputError(
            f"not installed or not known to Why3: {', '.join(missing)} "
            f"(installed: {', '.join(installed)})"
        )
    return list(asked) or installed


def _refuse_other_attempts(store: RunStore, text: str, out: Path) -> None:
    for a in store.attempts():
        if a.proof != text:
            raise InputError(
                f"{out} holds other attempts ({a.problem_id}: {a.proof[:60]!r}): give a new --out"
            )


def _by_source(manifest: dict, pending: set[str]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for entry in manifest["problems"]:
        if entry["id"] in pending:
            groups[entry["source"]].append(entry)
    return dict(groups)


def _prove(source: str, entries: list[dict], manifest: dict, opts: AtpOptions, provers: list[str]):
    """(problem id, outcome) for each VC of `source` that `entries` ask for."""
    wanted = {e["number"]: e["id"] for e in entries}  # the VC's place in the file
    split = manifest["granularity"] == "goal"
    with readable_source(Path(source), manifest["complicated"]) as (path, _):
        found = why3_tool.prove(
            path, split, opts.budget, opts.strategy, provers, Path(source).parent
        )
        for result in found:
            pid = wanted.get(result.goal.number)
            if pid is None:
                continue
            verdict = Verdict.OK if result.valid else Verdict.FAIL
            message = result.provers if result.valid else "not closed in the budget"
            yield pid, Outcome(verdict, Stage.CHECK, result.seconds, message)


def summarize(rows: list[ResultRow]) -> list[Solve]:
    """Per problem: solved when the provers closed it, by those the message names."""
    return [
        Solve(
            problem_id=row.problem_id,
            category=row.category,
            tactic=row.message if row.verdict is Verdict.OK else None,
            seconds=row.seconds if row.verdict is Verdict.OK else None,
            checked=row.verdict is not None,
        )
        for row in sorted(rows, key=lambda row: row.problem_id)
    ]
