"""feedback.jsonl beside results.csv: one line per FAIL that has feedback (`proofeval
check --feedback on`), so results.csv keeps its columns:

    {"problem_id": ..., "attempt": 0, "verdict": "FAIL", "message": the prover's one line,
     "feedback": {"goals": [...], "more_goals": n, "failed_step": i or null,
                  "failed_tactic": ..., "message": ...}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proofeval.files import write_text_atomically
from proofeval.store import ResultRow

FEEDBACK_FILE = "feedback.jsonl"


def feedback_entries(
    rows: list[ResultRow], feedback: list[tuple[str, int, dict]]
) -> list[dict[str, Any]]:
    """Each attempt's feedback with its verdict and one-line message, in `feedback`'s order."""
    by_attempt = {(r.problem_id, r.attempt): r for r in rows}
    entries = []
    for problem_id, index, kept in feedback:
        row = by_attempt.get((problem_id, index))
        verdict = None if row is None or row.verdict is None else row.verdict.value
        message = "" if row is None else row.message
        entries.append({"problem_id": problem_id, "attempt": index, "verdict": verdict,
                        "message": message, "feedback": kept})  # fmt: skip
    return entries


def write_feedback_jsonl(
    rows: list[ResultRow], feedback: list[tuple[str, int, dict]], path: Path
) -> None:
    """Write `path` when the run has feedback; remove a stale one when it has none."""
    if not feedback:
        path.unlink(missing_ok=True)
        return
    lines = (json.dumps(e, ensure_ascii=False) + "\n" for e in feedback_entries(rows, feedback))
    write_text_atomically(path, "".join(lines))
