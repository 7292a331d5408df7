"""Reports: the per-category table, results.csv and the s2n-bignum-bench results CSV."""

from __future__ import annotations

import csv
from pathlib import Path

from proofeval.model import Problem, Stage, Verdict
from proofeval.report.official_csv import problem_verdicts, write_official_csv
from proofeval.report.table import CategoryRow, category_table, format_table, write_results_csv
from proofeval.store import ResultRow


def row(pid: str, verdict: Verdict | None, category: str = "generic", attempt: int = 0):
    if verdict is None:
        return ResultRow(pid, attempt, category, None, None, None, "")
    return ResultRow(pid, attempt, category, verdict, Stage.CHECK, 1.5, f"{verdict.value} msg")


ROWS = [
    row("a1", Verdict.OK, "bit_vector"),
    row("a2", Verdict.FAIL, "bit_vector"),
    row("a3", Verdict.TIMEOUT, "bit_vector"),
    row("b1", Verdict.OK),
    row("b2", Verdict.ERROR),
    row("b3", Verdict.CHEATING),
    row("b4", None),
]


def test_category_table_counts():
    table = category_table(ROWS)
    assert table == [
        CategoryRow("bit_vector", problems=3, total=3, evaluated=3, ok=1, fail=1, timeout_error=1),
        CategoryRow("generic", problems=4, total=4, evaluated=3, ok=1, timeout_error=1, cheating=1),
        CategoryRow(
            "Total", problems=7, total=7, evaluated=6, ok=2, fail=1, timeout_error=2, cheating=1
        ),
    ]
    assert [round(r.ok_percent, 1) for r in table] == [33.3, 25.0, 28.6]


def test_a_problem_without_an_attempt_counts_as_unsolved_in_the_table():
    problems = [Problem("a1", "`T`", category="bit_vector"), Problem("zz", "`T`", category="new")]
    problems += [Problem(r.problem_id, "`T`", category=r.category) for r in ROWS[1:]]
    table = category_table(ROWS, problems)
    names = [r.category for r in table]
    assert names == ["bit_vector", "generic", "new", "Total"]
    new, total = table[2], table[3]
    assert (new.problems, new.unattempted, new.total, new.ok_percent) == (1, 1, 0, 0.0)
    assert (total.problems, total.unattempted, total.total) == (8, 1, 7)
    # 2 OK over 7 attempts and one problem with none: 2/8, never 2/7
    assert total.ok_percent == 25.0


def test_category_table_of_nothing():
    assert category_table([]) == [CategoryRow("Total")]
    assert CategoryRow("Total").ok_percent == 0.0


def test_format_table_is_aligned():
    text = format_table(category_table(ROWS))
    assert text.splitlines() == [
        "Category    Problems  Attempts  Eval  OK  FAIL  TO/ERR  CHEATING  OK/Tot",
        "------------------------------------------------------------------------",
        "bit_vector         3         3     3   1     1       1         0   33.3%",
        "generic            4         4     3   1     0       1         1   25.0%",
        "------------------------------------------------------------------------",
        "Total              7         7     6   2     1       2         1   28.6%",
    ]


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_results_csv(tmp_path: Path):
    path = tmp_path / "out" / "results.csv"
    path.parent.mkdir()
    path.write_text("old contents")
    rows = [row("a1", Verdict.FAIL), row("a1", None, attempt=1)]
    rows[0] = ResultRow("a1", 0, "generic", Verdict.FAIL, Stage.PRECHECK, 0.0123, 'uses "Sys", no')

    write_results_csv(rows, path)

    assert read_csv(path) == [
        ["problem_id", "attempt", "category", "verdict", "stage", "seconds", "message", "round"],
        ["a1", "0", "generic", "FAIL", "precheck", "0.012", 'uses "Sys", no', "0"],
        ["a1", "1", "generic", "", "", "", "", "0"],
    ]
    assert [p.name for p in path.parent.iterdir()] == ["results.csv"]  # no temp file left


def test_results_csv_creates_directory_and_keeps_umask_permissions(tmp_path: Path):
    path = tmp_path / "new" / "results.csv"
    write_results_csv([], path)
    assert read_csv(path) == [
        ["problem_id", "attempt", "category", "verdict", "stage", "seconds", "message", "round"]
    ]
    assert path.stat().st_mode & 0o044  # readable by others as usual, not a private temp file


def test_problem_verdicts_combine_attempts():
    rows = [
        row("p_ok", Verdict.FAIL),
        row("p_ok", Verdict.CHEATING, attempt=1),
        row("p_ok", Verdict.OK, attempt=2),
        row("p_cheat", Verdict.TIMEOUT),
        row("p_cheat", Verdict.CHEATING, attempt=1),
        row("p_first", None),
        row("p_first", Verdict.ERROR, attempt=2),
        row("p_first", Verdict.FAIL, attempt=1),
        row("p_none", None),
    ]
    assert problem_verdicts(rows) == {
        "p_ok": Verdict.OK,
        "p_cheat": Verdict.CHEATING,
        "p_first": Verdict.FAIL,
    }


def test_official_csv_matches_collect_verdicts_format(tmp_path: Path):
    path = tmp_path / "results.csv"
    rows = [*ROWS, row("a2", Verdict.OK, "bit_vector", attempt=1)]

    write_official_csv(rows, path)

    assert path.read_bytes().decode() == (
        "Problem,Verdict\r\n"
        "a1,OK\r\na2,OK\r\na3,TIMEOUT\r\nb1,OK\r\nb2,ERROR\r\nb3,CHEATING\r\n"
        "--,\r\n"
        "SUMMARY,\r\n"
        "CHEATING,1\r\nERROR,1\r\nOK,3\r\nTIMEOUT,1\r\n"
    )
