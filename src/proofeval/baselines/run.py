"""`proofeval baseline`: check a portfolio of automation on every problem, each tactic one
attempt of its problem (in the run store, results.csv and reports like any answer), and
count a problem solved when any tactic closes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proofeval.baselines import tactics
from proofeval.console import say
from proofeval.errors import InputError
from proofeval.files import write_csv_atomically
from proofeval.loaders import Selection, load_benchmark
from proofeval.model import Attempt, Problem, Verdict
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.provers.registry import supported
from proofeval.report.table import format_grid, write_results_csv
from proofeval.runs.check import check_jobs, record_provers
from proofeval.store import ResultRow, RunStore

CSV_NAME = "baseline.csv"
CSV_COLUMNS = ("problem_id", "category", "solved", "tactic", "seconds")


@dataclass(frozen=True)
class BaselineOptions:
    problems: Path
    out: Path
    method: str
    tactic_timeout: float | None = None  # None: the method's default (tactics.py)
    problem_timeout: float | None = None  # the paper's budget per problem (hammer: ATPLimit)
    settings: CheckSettings = CheckSettings()
    selection: Selection = Selection()


@dataclass(frozen=True)
class Solve:
    """One problem's outcome: the first tactic (in portfolio order) that closed it, if any.
    `checked`: every tactic has a verdict."""

    problem_id: str
    category: str
    tactic: str | None
    seconds: float | None
    checked: bool

    @property
    def solved(self) -> bool:
        return self.tactic is not None


def run_baseline(
    opts: BaselineOptions, warm: dict[str, SharedProcess] | None = None
) -> list[Solve]:
    """Check what the run directory lacks, write results.csv and baseline.csv; the solves."""
    loaded = load_benchmark(opts.problems, opts.selection).problems
    problems = {p.id: tactics.with_tools(p, opts.method, opts.problem_timeout) for p in loaded}
    attempts = _portfolio_attempts(problems.values(), opts.method)
    store = RunStore(opts.out)
    try:
        _refuse_other_attempts(store, attempts, opts.out)
        store.add_problems(problems.values())
        store.add_attempts(attempts)
        pending = store.pending(attempts)
        if len(pending) < len(attempts):
            say(f"{len(attempts) - len(pending)} of {len(attempts)} attempts already checked")
        jobs = [
            Job(a, problems[a.problem_id], budget(opts, problems[a.problem_id])) for a in pending
        ]
        check_jobs(jobs, store, opts.settings, warm)
        rows = store.results()
    finally:
        store.close()
    record_provers(opts.out, list(problems.values()), opts.settings)
    write_results_csv(rows, opts.out / "results.csv")
    solves = summarize(rows, problems, opts.method)
    write_baseline_csv(solves, opts.out / CSV_NAME)
    return solves


def budget(opts: BaselineOptions, problem: Problem) -> float:
    """A tactic's wall-clock budget: --problem-timeout, else --tactic-timeout, else the
    method's default."""
    if opts.problem_timeout is not None:
        return opts.problem_timeout
    if opts.tactic_timeout is not None:
        return opts.tactic_timeout
    return tactics.default_timeout(problem.prover, opts.method)


def _portfolio_attempts(problems, method: str) -> list[Attempt]:
    """Every problem's portfolio; InputError (before anything starts) for a prover that has
    no such baseline or no checker."""
    attempts: list[Attempt] = []
    for problem in problems:
        attempts.extend(tactics.attempts(problem, method))
        if problem.prover not in supported():
            raise InputError(
                f"no checker for prover {problem.prover!r} yet (proofeval checks: "
                f"{', '.join(sorted(supported()))})"
            )
    if not attempts:
        raise InputError("the benchmark has no problems")
    return attempts


def _refuse_other_attempts(store: RunStore, attempts: list[Attempt], out: Path) -> None:
    """A run directory holds one baseline: attempts of another method or of a model's run
    would be mixed into its verdicts and reports."""
    ours = {(a.problem_id, a.index, a.proof) for a in attempts}
    for a in store.attempts():
        if (a.problem_id, a.index, a.proof) not in ours:
            raise InputError(
                f"{out} holds other attempts ({a.problem_id} #{a.index}: {a.proof[:40]!r}), "
                "from another method or run: give a new --out"
            )


def summarize(rows: list[ResultRow], problems: dict[str, Problem], method: str) -> list[Solve]:
    """Per problem (by id): solved if any attempt is OK, by the first such tactic."""
    by_problem: dict[str, list[ResultRow]] = {}
    for row in rows:
        by_problem.setdefault(row.problem_id, []).append(row)
    solves = []
    for pid in sorted(by_problem):
        tried = sorted(by_problem[pid], key=lambda row: row.attempt)
        portfolio = tactics.portfolio(problems[pid].prover, method)
        first = next((row for row in tried if row.verdict == Verdict.OK), None)
        solves.append(
            Solve(
                problem_id=pid,
                category=tried[0].category,
                tactic=None if first is None else portfolio[first.attempt].name,
                seconds=None if first is None else first.seconds,
                checked=all(row.verdict is not None for row in tried),
            )
        )
    return solves


def write_baseline_csv(solves: list[Solve], path: Path) -> None:
    """One line per problem: problem_id, category, solved (1/0), tactic, seconds."""
    records = [CSV_COLUMNS]
    for s in solves:
        seconds = "" if s.seconds is None else f"{s.seconds:.3f}"
        records.append((s.problem_id, s.category, str(int(s.solved)), s.tactic or "", seconds))
    write_csv_atomically(path, records)


def solve_table(solves: list[Solve]) -> str:
    """Per category: problems, solved, solved/problems; then the Total row ("Problems"
    means problems, as in every table)."""
    categories = sorted({s.category for s in solves})
    lines = [("Category", "Problems", "Solved", "Solved/Tot")]
    for name in [*categories, "Total"]:
        group = [s for s in solves if name in ("Total", s.category)]
        solved = sum(s.solved for s in group)
        lines.append((name, str(len(group)), str(solved), f"{100.0 * solved / len(group):.1f}%"))
    return format_grid(lines)


def closers(solves: list[Solve]) -> str:
    """Which tactics closed how many problems (the first OK of each), most first."""
    counts: dict[str, int] = {}
    for s in solves:
        if s.tactic is not None:
            counts[s.tactic] = counts.get(s.tactic, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{tactic} {n}" for tactic, n in ranked) or "none"
