"""The report as one stable JSON document (`proofeval report --json`).

One run:

    {"format": "proofeval-report/1", "run": RUN_DIR,
     "problems": all problems of the run, "evaluated_problems": those with a checked attempt,
     "unevaluated_problems": [the others' ids...] (counted as unsolved in every rate),
     "problems_without_attempt": n (of those, the ones with no attempt at all),
     "attempts": n, "checked_attempts": n, "unchecked_attempts": n,
     "ks": [1, 2, 4, 8],
     "pass_at_k": {"1": 0.41, "2": ..., "8": ...},
     "pass_at_1": {"mean": 0.41, "stderr": 0.03, "problems": 47} or null,
     "verdicts": {"OK": n, "FAIL": n, "CHEATING": n, "TIMEOUT": n, "ERROR": n},
     "ok_share": OK / (attempts + problems without attempt),
     "timeout_share": TIMEOUT / checked attempts,
     "categories": {name: {the keys above from "problems" to "timeout_share",
                           except "unevaluated_problems" and "ks"}},
     "generation": {"completions", "models", "mean_prompt_tokens",
                    "mean_completion_tokens", "mean_seconds", "total_tokens"} or null,
     "feedback": [{"problem_id", "attempt", "verdict", "message", "feedback": {"goals",
                  "more_goals", "failed_step", "failed_tactic", "message"}}...]
                 (the FAILs with feedback: `check --feedback on`; see feedback_jsonl.py)}

A run with arms (`run --arm NAME`) adds "arm": "default" (the figures above are the
default arm's alone) and "arms": {NAME: the document above of that arm}, never pooled.

Two runs (`proofeval report RUN_A RUN_B --json`):

    {"format": "proofeval-comparison/1", "runs": {"A": document, "B": document},
     "difference": {"ok_share": B - A, "pass_at_1": B - A (means), "pass_at_k": {k: B - A},
                    "categories": {name: {"ok_share", "pass_at_k"}}}}

Shares and rates are fractions in [0, 1]; a difference is B minus A, over the k both runs
report and the categories both have; null where a figure is undefined (no attempts, no
checked attempt, stderr of fewer than two problems). metrics.py defines every figure.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from proofeval.metrics import Breakdown, Estimate
from proofeval.report.feedback_jsonl import feedback_entries
from proofeval.report.rounds import rounds_sections
from proofeval.report.run_data import RunData

FORMAT = "proofeval-report/1"
COMPARISON_FORMAT = "proofeval-comparison/1"


def breakdown_document(row: Breakdown) -> dict[str, Any]:
    return {
        "problems": row.problems,
        "evaluated_problems": row.evaluated,
        "problems_without_attempt": row.unattempted,
        "attempts": row.attempts,
        "checked_attempts": row.checked,
        "unchecked_attempts": row.unchecked,
        "pass_at_k": {str(k): value for k, value in row.pass_at_k.items()},
        "pass_at_1": _estimate(row.pass_at_1),
        "verdicts": {verdict.value: count for verdict, count in row.verdicts.items()},
        "ok_share": row.ok_share,
        "timeout_share": row.timeout_share,
    }


def _estimate(est: Estimate | None) -> dict[str, Any] | None:
    return None if est is None else asdict(est)


def run_document(run: RunData) -> dict[str, Any]:
    doc = _one_document(run)
    if run.arms:
        doc["arm"] = run.arm
        doc["arms"] = {arm.arm: _one_document(arm) for arm in run.arms}
    return doc


def _one_document(run: RunData) -> dict[str, Any]:
    m = run.metrics
    return {
        "format": FORMAT,
        "run": str(run.path),
        "produced_by": run.info,
        "round": run.round,  # the figures are each sample's, after this repair round
        **breakdown_document(m.overall),
        "unevaluated_problems": list(m.unevaluated),
        "ks": list(m.ks),
        "categories": {name: breakdown_document(row) for name, row in m.categories.items()},
        "generation": None if m.generation is None else _generation(m.generation),
        **rounds_sections(run.path),
        "feedback": feedback_entries(run.results, run.feedback),
    }


def _generation(gen) -> dict[str, Any]:
    doc = asdict(gen)
    doc["models"] = list(gen.models)
    return doc


def comparison_document(a: RunData, b: RunData) -> dict[str, Any]:
    ma, mb = a.metrics, b.metrics
    shared = sorted(set(ma.categories) & set(mb.categories))
    return {
        "format": COMPARISON_FORMAT,
        "runs": {"A": run_document(a), "B": run_document(b)},
        "difference": {
            **_difference(ma.overall, mb.overall),
            "pass_at_1": _minus(_mean(ma.overall.pass_at_1), _mean(mb.overall.pass_at_1)),
            "categories": {
                name: _difference(ma.categories[name], mb.categories[name]) for name in shared
            },
        },
    }


def _difference(a: Breakdown, b: Breakdown) -> dict[str, Any]:
    ks = [k for k in a.pass_at_k if k in b.pass_at_k]
    return {
        "ok_share": _minus(a.ok_share, b.ok_share),
        "pass_at_k": {str(k): b.pass_at_k[k] - a.pass_at_k[k] for k in ks},
    }


def _mean(est: Estimate | None) -> float | None:
    return None if est is None else est.mean


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
