"""The per-category table as the s2n-bignum-bench paper prints it, and results.csv.

Columns: Problems (the category's problems, with or without attempts), Attempts, Eval (the
attempts with a verdict), the verdicts of attempts, and OK/Tot: OK over the attempts, a
problem with no attempt counting as one attempt that is not OK. Every table that shows
these names means exactly this."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from proofeval.files import write_csv_atomically
from proofeval.model import Problem, Verdict
from proofeval.store import ResultRow

HEADER = ("Category", "Problems", "Attempts", "Eval", "OK", "FAIL", "TO/ERR", "CHEATING", "OK/Tot")
RESULTS_COLUMNS = (
    "problem_id", "attempt", "category", "verdict", "stage", "seconds", "message", "round"
)  # fmt: skip


@dataclass(frozen=True)
class CategoryRow:
    """One category: its problems, those with no attempt, and counts of attempts: total,
    evaluated (have a verdict), per verdict."""

    category: str
    problems: int = 0
    unattempted: int = 0
    total: int = 0
    evaluated: int = 0
    ok: int = 0
    fail: int = 0
    timeout_error: int = 0
    cheating: int = 0

    @property
    def ok_percent(self) -> float:
        """OK as a percentage of all attempts (pending ones count as not OK), a problem
        with no attempt counting as one attempt that is not OK."""
        total = self.total + self.unattempted
        return 100.0 * self.ok / total if total else 0.0

    def cells(self) -> tuple[str, ...]:
        counts = (self.problems, self.total, self.evaluated, self.ok, self.fail)
        numbers = (*counts, self.timeout_error, self.cheating)
        return (self.category, *map(str, numbers), f"{self.ok_percent:.1f}%")


def _count(category: str, rows: Sequence[ResultRow], problems: set[str]) -> CategoryRow:
    verdicts = [row.verdict for row in rows]
    attempted = {row.problem_id for row in rows}
    return CategoryRow(
        category=category,
        problems=len(problems | attempted),
        unattempted=len(problems - attempted),
        total=len(rows),
        evaluated=sum(v is not None for v in verdicts),
        ok=verdicts.count(Verdict.OK),
        fail=verdicts.count(Verdict.FAIL),
        timeout_error=verdicts.count(Verdict.TIMEOUT) + verdicts.count(Verdict.ERROR),
        cheating=verdicts.count(Verdict.CHEATING),
    )


def category_table(rows: list[ResultRow], problems: Iterable[Problem] = ()) -> list[CategoryRow]:
    """One row per category, sorted by name, then the "Total" row. `problems`: those of the
    run, so that a problem with no attempt is counted (as unsolved), never left out."""
    by_category: dict[str, list[ResultRow]] = {}
    ids: dict[str, set[str]] = {}
    for problem in problems:
        by_category.setdefault(problem.category, [])
        ids.setdefault(problem.category, set()).add(problem.id)
    for row in rows:
        by_category.setdefault(row.category, []).append(row)
    table = [_count(name, by_category[name], ids.get(name, set())) for name in sorted(by_category)]
    every = set().union(*ids.values()) if ids else set()
    return [*table, _count("Total", rows, every)]


@dataclass(frozen=True)
class Column:
    """A column added to the right of the paper table: a cell per category name ("-" if none)."""

    header: str
    cells: Mapping[str, str]


def format_table(rows: list[CategoryRow], extra: Sequence[Column] = ()) -> str:
    """Aligned plain text: header, rule, the categories, rule, the last (Total) row."""
    header = (*HEADER, *(column.header for column in extra))
    lines = [header, *(_cells(row, extra) for row in rows)]
    return format_grid(lines)


def _cells(row: CategoryRow, extra: Sequence[Column]) -> tuple[str, ...]:
    return (*row.cells(), *(column.cells.get(row.category, "-") for column in extra))


def format_grid(lines: Sequence[Sequence[str]], total: bool = True) -> str:
    """A header line, then rows; the first column left-aligned, the rest right-aligned; a rule
    under the header and (when the last row is a `total`) above the last row."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]

    def render(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join((first, *rest))

    rule = "-" * len(render(lines[0]))
    body = [render(cells) for cells in lines[1:]]
    if not total:
        return "\n".join([render(lines[0]), rule, *body])
    return "\n".join([render(lines[0]), rule, *body[:-1], rule, *body[-1:]])


def write_results_csv(rows: list[ResultRow], path: Path) -> None:
    """One line per attempt (and per repair round of it): problem_id, attempt, category,
    verdict, stage, seconds, message, round."""
    records = [RESULTS_COLUMNS, *(_result_record(row) for row in rows)]
    write_csv_atomically(path, records)


def _result_record(row: ResultRow) -> tuple[str, ...]:
    return (
        row.problem_id,
        str(row.attempt),
        row.category,
        "" if row.verdict is None else row.verdict.value,
        "" if row.stage is None else row.stage.value,
        "" if row.seconds is None else f"{row.seconds:.3f}",
        row.message,
        str(row.round),
    )
