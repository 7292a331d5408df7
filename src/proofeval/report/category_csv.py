"""Per-category figures as CSV (`proofeval report --csv`): one row per run and category.

Columns: run, category (the last row of each run is "Total"), problems, evaluated_problems,
problems_without_attempt, attempts, checked_attempts, OK, FAIL, CHEATING, TIMEOUT, ERROR,
ok_share, timeout_share, pass@1_mean, pass@1_stderr, then pass@k for every k any of the runs
reports. Shares are
fractions; an undefined figure (or a k a run does not report) is an empty cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from proofeval.files import write_csv_atomically
from proofeval.metrics import Breakdown
from proofeval.model import Verdict
from proofeval.report.run_data import RunData
from proofeval.report.terminal import TOTAL, rows_by_name

FIXED = (
    "run",
    "category",
    "problems",
    "evaluated_problems",
    "problems_without_attempt",
    "attempts",
    "checked_attempts",
    *(v.value for v in Verdict),
    "ok_share",
    "timeout_share",
    "pass@1_mean",
    "pass@1_stderr",
)


def category_records(runs: Sequence[RunData]) -> list[tuple[str, ...]]:
    ks = sorted({k for run in runs for k in run.metrics.ks})
    records = [(*FIXED, *(f"pass@{k}" for k in ks))]
    for run in runs:
        rows = rows_by_name(run.metrics)
        names = [*run.metrics.categories, TOTAL]
        records += [_record(str(run.path), name, rows[name], ks) for name in names]
    return records


def _record(run: str, name: str, row: Breakdown, ks: list[int]) -> tuple[str, ...]:
    est = row.pass_at_1
    figures = (
        row.ok_share,
        row.timeout_share,
        None if est is None else est.mean,
        None if est is None else est.stderr,
        *(row.pass_at_k.get(k) for k in ks),
    )
    counts = (row.problems, row.evaluated, row.unattempted, row.attempts, row.checked)
    verdicts = (row.verdicts[v] for v in Verdict)
    return (run, name, *map(str, counts), *map(str, verdicts), *map(_number, figures))


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def write_category_csv(runs: Sequence[RunData], path: Path) -> None:
    write_csv_atomically(path, category_records(runs))
