"""A grading report's figures (grading/report.py's document) as HTML tables, one run or two
side by side (a column or a row per run, never pooled). Every text passes through `escape`:
item ids, models and reasons come from the data or a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proofeval.grading.report import sorted_reasons
from proofeval.report.html import escape

Docs = list[tuple[str, dict[str, Any]]]  # (label, report document)

RATES = (("steps", "steps"), ("responses", "responses"), ("first_error", "first error"))
RATE_KEYS = ("tpr", "tnr", "balanced_accuracy", "balanced_f1")
RATE_HEADS = ("TPR", "TNR", "balanced accuracy", "balanced F1")


def metrics_tables(docs: Docs) -> str:
    """Every table of the report's figures, with its heading."""
    parts = [_section("Gradings", _gradings(docs)), _section("Failed gradings", _reasons(docs))]
    parts.append(_section("Rates", _rates(docs), "mean over the runs; per run below"))
    parts.append(_section("Rates per run", _per_run(docs)))
    parts.append(_section("Error finding", _curves(docs), "pessimistic over k runs"))
    parts.append(_section("Location matching", _matching(docs)))
    parts += [_section("Cost", _cost(docs)), _section("Cost by stage", _stages(docs))]
    return "".join(parts)


def _section(title: str, table: str, note: str = "") -> str:
    if not table:
        return ""
    shown = f' <span class="tag">{escape(note)}</span>' if note else ""
    return f"<h3>{escape(title)}{shown}</h3>{table}"


def table(head: Sequence[str], rows: Sequence[Sequence[object]], css: str = "figures") -> str:
    """A table of text cells (escaped); "" without rows."""
    if not rows:
        return ""
    heads = "".join(f"<th>{escape(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_cell(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return (
        f'<div class="panel"><table class="{css}"><thead><tr>{heads}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _gradings(docs: Docs) -> str:
    rows = [
        (label, d["method"], ", ".join(d["models"]) or "-", d["items"], d["runs"],
         d["gradings"]["total"], d["gradings"]["unparsed"], len(d["ungraded_items"]),
         len(d["papers_without_text"]))
        for label, d in docs
    ]  # fmt: skip
    head = ("run", "method", "models", "items", "runs", "gradings", "failed (counted wrong)",
            "items not graded", "papers without text")  # fmt: skip
    return table(head, rows)


def _reasons(docs: Docs) -> str:
    total: dict[str, int] = {}
    for _, d in docs:
        for kind, n in d["gradings"]["reasons"].items():
            total[kind] = total.get(kind, 0) + n
    rows = [
        (kind, *(d["gradings"]["reasons"].get(kind, 0) for _, d in docs))
        for kind, _ in sorted_reasons(total)
    ]
    return table(("reason", *(label for label, _ in docs)), rows)


def _rates(docs: Docs) -> str:
    rows = []
    for name, title in RATES:
        for label, d in docs:
            r = d[name]
            if r is not None:
                sizes = [v for k, v in r.items() if k not in (*RATE_KEYS, "per_run")]
                rows.append((title, label, *(pct(r[k]) for k in RATE_KEYS), *sizes))
    return table(("figure", "run", *RATE_HEADS, "true correct", "true incorrect"), rows)


def _per_run(docs: Docs) -> str:
    rows = [
        (title, label, n, *(pct(one[k]) for k in RATE_KEYS))
        for name, title in RATES
        for label, d in docs
        if d[name] is not None
        for n, one in enumerate(d[name]["per_run"])
    ]
    return table(("figure", "run", "grading run", *RATE_HEADS), rows, "figures compact")


def _curves(docs: Docs) -> str:
    """A row per curve, k and run: the runs' points at the same k next to each other."""
    names = ["steps", "responses", "locations"]
    points = sorted(
        ((names.index(name), p["k"], label, name, p) for label, d in docs
         for name, found in d["error_finding"].items() for p in found),
        key=lambda row: row[:3],
    )  # fmt: skip
    rows = [
        (name, label, p["k"], pct(p["precision"]), pct(p["recall"]), p["subsets"],
         "all" if p["seed"] is None else f"a sample (seed {p['seed']}) of {p['total_subsets']}")
        for _, _, label, name, p in points
    ]  # fmt: skip
    return table(("positives: incorrect", "run", "k", "precision", "recall", "subsets", "of"), rows)


def _matching(docs: Docs) -> str:
    rows = [
        (label, m["judged"], m["unparsed"], m["missing"])
        for label, d in docs
        if (m := d["matching"]) is not None
    ]
    return table(("run", "judged", "unparsed (no match)", "not judged yet"), rows)


def _cost(docs: Docs) -> str:
    rows = []
    for label, d in docs:
        c = d["cost"]
        judge = c["matching"]
        rows.append(
            (label, c["calls"], c["calls_per_grading"], c["prompt_tokens"],
             c["completion_tokens"], c["tokens_per_grading"], f"{c['seconds']:.1f}",
             judge["calls"], judge["prompt_tokens"] + judge["completion_tokens"])
        )  # fmt: skip
    head = ("run", "calls", "calls per grading", "prompt tokens", "completion tokens",
            "tokens per grading", "seconds of requests", "matching calls",
            "matching tokens")  # fmt: skip
    return table(head, rows)


def _stages(docs: Docs) -> str:
    rows = [
        (label, stage, s["calls"], s["prompt_tokens"], s["completion_tokens"])
        for label, d in docs
        for stage, s in d["cost"]["by_stage"].items()
    ]
    return table(("run", "stage", "calls", "prompt tokens", "completion tokens"), rows)
