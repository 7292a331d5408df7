"""The report of a grading run: metrics (grading/metrics.py defines each), cost, as text or JSON.

`proofeval report RUN_DIR --json` on a grading run prints:

    {"format": "proofeval-grading-report/1", "run": RUN_DIR, "method": "baseline" | "pf",
     "models": [...], "items": n, "runs": n (runs every item has; the metrics use these),
     "gradings": {"total": n, "unparsed": n, "reasons": {kind: n}},
     "ungraded_items": [ids], "papers_without_text": {id: why},
     "steps": rates or null, "responses": rates or null, "first_error": rates or null,
     "error_finding": {"steps": curve, "responses": curve, "locations": curve},
     "matching": {"judged": n, "unparsed": n, "missing": n} or null,
     "cost": {"calls": n, "calls_per_grading": x, "prompt_tokens": n,
              "completion_tokens": n, "tokens_per_grading": x, "seconds": x,
              "by_stage": {stage: {"calls", "prompt_tokens", "completion_tokens"}},
              "matching": {"calls", "prompt_tokens", "completion_tokens"}}}

rates: {"tpr", "tnr", "balanced_accuracy", "balanced_f1": means over the runs, "per_run":
[{the four for run 0}, ...], "positives", "negatives" (first_error: "correct", "flawed")}.
curve: [{"k", "precision", "recall", "subsets", "total_subsets", "seed"}] for k = 1..runs,
seed null when every size-k subset was averaged, [] when the data has no such labels.
A reason's kind (grading/parse.py's reason_kind) is its stage and what failed, one per kind of
malformed reply or unparsed answer: "judge: malformed reply: no choices returned",
"verify: no ```json block", ...
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from proofeval.errors import InputError
from proofeval.grading import matching
from proofeval.grading import metrics as m
from proofeval.grading.items import Item
from proofeval.grading.parse import reason_kind
from proofeval.grading.result import Grading
from proofeval.grading.store import CallRecord, GradingStore

FORMAT = "proofeval-grading-report/1"


@dataclass(frozen=True)
class GradingRun:
    path: Path
    method: str
    items: list[Item]
    gradings: list[Grading]
    calls: list[CallRecord]


def load_grading_run(run_dir: Path) -> GradingRun:
    store = GradingStore(run_dir)
    try:
        method = store.method()
        if method is None:
            raise InputError(f"{run_dir}: not a grading run")
        return GradingRun(
            run_dir, method, store.items(), store.gradings(), store.calls(prompts=False)
        )
    finally:
        store.close()


def runs_by_item(run: GradingRun) -> tuple[dict[str, list[Grading]], int]:
    """Each item's gradings by run index, cut to the n runs every graded item has; n."""
    by_item: dict[str, list[Grading]] = {item.id: [] for item in run.items}
    for g in sorted(run.gradings, key=lambda g: g.run):
        if g.item_id in by_item:
            by_item[g.item_id].append(g)
    counts = [len(gs) for gs in by_item.values() if gs]
    n = min(counts, default=0)
    return {k: gs[:n] for k, gs in by_item.items()}, n


def document(run: GradingRun) -> dict[str, Any]:
    by_item, n = runs_by_item(run)
    graded = [item for item in run.items if by_item[item.id]]
    counted = [g for gs in by_item.values() for g in gs]
    outputs = {(c.item_id, c.run, c.stage): c.output for c in run.calls}
    decisions = matching.decisions(run.items, run.gradings, outputs)
    return {
        "format": FORMAT,
        "run": str(run.path),
        "method": run.method,
        "models": sorted({c.model for c in run.calls}),
        "items": len(run.items),
        "runs": n,
        "gradings": {
            "total": len(counted),
            "unparsed": sum(1 for g in counted if not g.parsed),
            "reasons": dict(Counter(reason_kind(g.reason) for g in counted if not g.parsed)),
        },
        "ungraded_items": [item.id for item in run.items if not by_item[item.id]],
        "papers_without_text": {i.id: i.meta["no_text"] for i in run.items if "no_text" in i.meta},
        "steps": _step_rates(graded, by_item, n),
        "responses": _response_rates(graded, by_item, n),
        "first_error": _first_error(graded, by_item, n),
        "error_finding": _curves(graded, by_item, n, decisions),
        "matching": None
        if not any(matching.judged(i) for i in graded)
        else {
            "judged": decisions.judged,
            "unparsed": decisions.unparsed,
            "missing": decisions.missing,
        },
        "cost": _cost(run.calls, len(counted)),
    }


def _steps(g: Grading) -> list[int | None] | None:
    return g.steps if g.parsed else None


def _verdict(g: Grading) -> bool | None:
    return g.verdict if g.parsed else None


def _correct(item: Item) -> bool | None:
    return None if item.first_error is None else item.first_error == -1


def _rates_doc(per_run: list) -> dict[str, Any] | None:
    if not per_run:
        return None
    keys = ("tpr", "tnr", "balanced_accuracy", "balanced_f1")
    doc: dict[str, Any] = {k: m.mean([getattr(r, k) for r in per_run]) for k in keys}
    doc["per_run"] = [{k: getattr(r, k) for k in keys} for r in per_run]
    counts = {k: v for k, v in asdict(per_run[0]).items() if k not in keys}
    return {**doc, **counts}


def _step_rates(items: list[Item], by_item, n: int) -> dict[str, Any] | None:
    labelled = [i for i in items if i.kind == "steps" and i.labels is not None]
    if not labelled:
        return None
    return _rates_doc(
        [m.step_rates([(i.labels, _steps(by_item[i.id][r])) for i in labelled]) for r in range(n)]
    )


def _response_rates(items: list[Item], by_item, n: int) -> dict[str, Any] | None:
    known = [i for i in items if i.kind == "steps" and _correct(i) is not None]
    if not known:
        return None
    return _rates_doc(
        [
            m.response_rates([(_correct(i), _verdict(by_item[i.id][r])) for i in known])
            for r in range(n)
        ]
    )


def _first_error(items: list[Item], by_item, n: int) -> dict[str, Any] | None:
    known = [i for i in items if i.kind == "steps" and i.first_error is not None]
    if not known:
        return None
    per_run = []
    for r in range(n):
        cases = []
        for i in known:
            g = by_item[i.id][r]
            cases.append((i.first_error, g.first_error if g.parsed else None))
        per_run.append(m.first_error_rates(cases))
    return _rates_doc(per_run)


def _curves(items: list[Item], by_item, n: int, decisions: matching.Decisions) -> dict[str, Any]:
    labelled = [i for i in items if i.kind == "steps" and i.labels is not None]
    known = [i for i in items if i.kind == "steps" and _correct(i) is not None]
    papers = [i for i in items if matching.judged(i)]

    def steps(chosen) -> m.Counts:
        return _sum(
            m.step_counts(i.labels, [_steps(g) for g in by_item[i.id]], chosen) for i in labelled
        )

    def responses(chosen) -> m.Counts:
        return _sum(
            m.response_counts(_correct(i), [_verdict(g) for g in by_item[i.id]], chosen)
            for i in known
        )

    def locations(chosen) -> m.Counts:
        return _sum(
            m.location_counts(
                len(i.error_locations),
                [decisions.predictions(i, g) if g.parsed else [] for g in by_item[i.id]],
                chosen,
            )
            for i in papers
        )

    def curve(count: Callable, present: list) -> list[dict[str, Any]]:
        return [asdict(p) for p in m.pr_curve(count, n)] if present and n else []

    return {
        "steps": curve(steps, labelled),
        "responses": curve(responses, known),
        "locations": curve(locations, papers),
    }


def _sum(counts) -> m.Counts:
    return reduce(lambda a, b: a + b, counts, m.Counts())


def stage_name(stage: str) -> str:
    """The kind of a call's stage: "rewrite.1" -> "rewrite", "verify:L2" -> "verify"."""
    return stage.split(":", 1)[0].split(".", 1)[0]


def _cost(calls: list[CallRecord], gradings: int) -> dict[str, Any]:
    by_stage: dict[str, dict[str, int]] = {}
    match = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for c in calls:
        row = (
            match
            if c.run == matching.JUDGE_RUN
            else by_stage.setdefault(
                stage_name(c.stage), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
            )
        )
        row["calls"] += 1
        row["prompt_tokens"] += c.prompt_tokens
        row["completion_tokens"] += c.completion_tokens
    grading_calls = [c for c in calls if c.run != matching.JUDGE_RUN]
    total = sum(c.prompt_tokens + c.completion_tokens for c in grading_calls)
    return {
        "calls": len(grading_calls),
        "calls_per_grading": len(grading_calls) / gradings if gradings else None,
        "prompt_tokens": sum(c.prompt_tokens for c in grading_calls),
        "completion_tokens": sum(c.completion_tokens for c in grading_calls),
        "tokens_per_grading": total / gradings if gradings else None,
        "seconds": round(sum(c.seconds for c in grading_calls), 3),
        "by_stage": by_stage,
        "matching": match,
    }


def sorted_reasons(reasons: dict[str, int]) -> list[tuple[str, int]]:
    """The most frequent first, then by name."""
    return sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_text(doc: dict[str, Any]) -> str:
    """The report for a terminal."""
    g = doc["gradings"]
    lines = [
        f"grading run {doc['run']}: method {doc['method']}, "
        f"models {', '.join(doc['models']) or '-'}",
        f"{doc['items']} items x {doc['runs']} runs: {g['total']} gradings, "
        f"{g['unparsed']} failed (counted wrong)" + (", by reason:" if g["reasons"] else ""),
        *(f"  {n:>4}  {kind}" for kind, n in sorted_reasons(g["reasons"])),
    ]
    for item_id, why in doc["papers_without_text"].items():
        lines.append(f"  no text for {item_id}: {why}")
    if doc["ungraded_items"]:
        lines.append(f"  not graded yet: {', '.join(doc['ungraded_items'])}")
    for name, title in (
        ("steps", "steps"),
        ("responses", "responses"),
        ("first_error", "first error"),
    ):
        r = doc[name]
        if r is not None:
            lines.append(
                f"{title:<12} TPR {_pct(r['tpr'])}  TNR {_pct(r['tnr'])}  "
                f"balanced accuracy {_pct(r['balanced_accuracy'])}  "
                f"balanced F1 {_pct(r['balanced_f1'])}  (mean of {doc['runs']} runs)"
            )
    for name, points in doc["error_finding"].items():
        if points:
            lines.append(f"error finding ({name}; positive = incorrect), pessimistic over k runs:")
            for p in points:
                how = (
                    "all"
                    if p["seed"] is None
                    else f"sample (seed {p['seed']}) of {p['total_subsets']}"
                )
                lines.append(
                    f"  k={p['k']:<3} precision {_pct(p['precision']):>6}  recall "
                    f"{_pct(p['recall']):>6}  over {p['subsets']} subsets ({how})"
                )
    if doc["matching"]:
        mt = doc["matching"]
        lines.append(
            f"location matching: {mt['judged']} judged, {mt['unparsed']} unparsed (no match), "
            f"{mt['missing']} not judged yet"
        )
    c = doc["cost"]
    per = c["calls_per_grading"]
    lines.append(
        f"cost: {c['calls']} calls ({'-' if per is None else f'{per:.2f}'} per grading), "
        f"{c['prompt_tokens']} prompt + {c['completion_tokens']} completion tokens, "
        f"{c['seconds']:.1f} s of requests; by stage: "
        + (", ".join(f"{k} {v['calls']}" for k, v in c["by_stage"].items()) or "-")
    )
    if c["matching"]["calls"]:
        mc = c["matching"]
        lines.append(
            f"matching judge: {mc['calls']} calls, "
            f"{mc['prompt_tokens'] + mc['completion_tokens']} tokens"
        )
    return "\n".join(lines)
