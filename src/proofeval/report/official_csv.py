"""The results CSV of s2n-bignum-bench (its collect-verdicts.py), byte for byte in form.

    Problem,Verdict
    <problem id>,<verdict>          one line per problem with a verdict, sorted by id
    --,
    SUMMARY,
    <verdict>,<count>               one line per verdict that occurs, sorted by name

Lines end in CRLF, as Python's csv module writes them. Problems with no verdict yet are left
out, as the official script leaves out problems without a judge file. A problem's verdict is
its attempt's verdict; with several attempts it is OK if any attempt is OK, else CHEATING if
any is CHEATING, else the verdict of its first checked attempt.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from proofeval.files import write_csv_atomically
from proofeval.model import Verdict
from proofeval.store import ResultRow


def problem_verdicts(rows: list[ResultRow]) -> dict[str, Verdict]:
    """The verdict of each problem with at least one checked attempt, in attempt order."""
    checked: dict[str, list[Verdict]] = {}
    for row in sorted(rows, key=lambda r: (r.problem_id, r.attempt)):
        if row.verdict is not None:
            checked.setdefault(row.problem_id, []).append(row.verdict)
    return {pid: _combine(verdicts) for pid, verdicts in checked.items()}


def _combine(verdicts: list[Verdict]) -> Verdict:
    for decisive in (Verdict.OK, Verdict.CHEATING):
        if decisive in verdicts:
            return decisive
    return verdicts[0]


def write_official_csv(rows: list[ResultRow], path: Path) -> None:
    """Write the s2n-bignum-bench results CSV for these result rows (atomically)."""
    verdicts = problem_verdicts(rows)
    counts = Counter(verdict.value for verdict in verdicts.values())
    records = [
        ("Problem", "Verdict"),
        *((pid, verdicts[pid].value) for pid in sorted(verdicts)),
        ("--", ""),
        ("SUMMARY", ""),
        *((name, str(counts[name])) for name in sorted(counts)),
    ]
    write_csv_atomically(path, records)
