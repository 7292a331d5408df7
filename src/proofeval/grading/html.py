"""A grading run (or two) as one self-contained HTML page: the metrics as tables (each run
its own row or column, grading/html_tables.py), the precision-recall curve, and per proof what
each run (and, for pseudo-formalisation, each module) said.

Every text from the data or a model passes through `escape`; the page has no script, and its
Content-Security-Policy allows none, nor anything from elsewhere.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from proofeval.files import write_text_atomically
from proofeval.grading.html_tables import metrics_tables
from proofeval.grading.items import Item
from proofeval.grading.report import GradingRun, runs_by_item
from proofeval.grading.result import Grading
from proofeval.report import plots
from proofeval.report.html import CSS, escape

PICTURE = "pr_curve.png"
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'"

EXTRA_CSS = """
.step { border-left: 4px solid var(--unchecked); padding: 2px 0 2px 10px; margin: 6px 0; }
.step.good { border-color: var(--ok); } .step.bad { border-color: var(--fail); }
.yes { color: var(--ok); font-weight: 700; } .no { color: var(--fail); font-weight: 700; }
.failed { color: var(--error); font-weight: 700; }
"""


Labelled = list[tuple[str, GradingRun, dict[str, Any]]]  # (label, run, its report)


def write_grading_html(runs: Labelled, directory: Path, summary: str) -> Path:
    """Write DIR/index.html (and the curve as DIR/pr_curve.png) for one run or two
    (labelled A and B), with `summary` (the text report) on top; the page's path."""
    png = plots.precision_recall(
        {
            (f"{label} {name}" if len(runs) > 1 else name): [
                (p["k"], p["precision"], p["recall"]) for p in points
            ]
            for label, _, doc in runs
            for name, points in doc["error_finding"].items()
        }
    )
    if png is not None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / PICTURE).write_bytes(png)
    page = directory / "index.html"
    write_text_atomically(page, render(runs, summary, png))
    return page


def render(runs: Labelled, summary: str, png: bytes | None) -> str:
    title = " vs ".join(str(run.path) for _, run, _ in runs)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        f"<title>proofeval grading: {escape(title)}</title>",
        f"<style>{CSS}{EXTRA_CSS}</style></head><body><main>",
        "<h1>proofeval grading report</h1>",
        *(
            f'<p class="run">{escape(f"{label}: " if len(runs) > 1 else "")}'
            f"{escape(str(run.path))}</p>"
            for label, run, _ in runs
        ),
        "<h2>Metrics</h2>",
        metrics_tables([(label, doc) for label, _, doc in runs]),
        _folded("The report as text", summary),
    ]
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        parts += [
            '<h2>Precision and recall</h2><div class="pictures"><figure>',
            f'<img src="data:image/png;base64,{data}" alt="precision-recall curve"></figure></div>',
        ]
    for label, run, _ in runs:
        by_item, _ = runs_by_item(run)
        parts.append(f"<h2>Proofs{escape(f' ({label})' if len(runs) > 1 else '')}</h2>")
        parts += [_item(item, by_item[item.id]) for item in run.items]
    parts += ["<footer>Definitions: docs/grading.md.</footer>", "</main></body></html>"]
    return "\n".join(parts) + "\n"


def _item(item: Item, gradings: list[Grading]) -> str:
    failed = sum(not g.parsed for g in gradings)
    summary = (
        f'<summary><span class="pid">{escape(item.id)}</span>'
        f'<span class="tag">{len(gradings)} runs, {failed} failed</span></summary>'
    )
    body = [f"<h4>Problem</h4><pre>{escape(item.problem)}</pre>"]
    if "no_text" in item.meta:
        body.append(f'<p class="failed">{escape(item.meta["no_text"])}</p>')
    if item.kind == "steps":
        body.append(_steps(item, gradings))
    elif item.error_locations is not None:
        body.append(
            f"<h4>Known error locations</h4><pre>{escape(', '.join(item.error_locations))}</pre>"
        )
    body += [_run(item, g) for g in gradings]
    return f'<details class="problem">{summary}<div class="body">{"".join(body)}</div></details>'


def _steps(item: Item, gradings: list[Grading]) -> str:
    rows = []
    for i, step in enumerate(item.steps):
        label = None if item.labels is None else item.labels[i]
        css = "" if label is None else ("good" if label == 1 else "bad")
        said = " ".join(_said(g, i) for g in gradings)
        truth = "" if label is None else ("label: correct" if label else "label: incorrect")
        rows.append(
            f'<div class="step {css}"><div class="meta"><b>Step {i}</b> {escape(truth)} '
            f"runs: {said}</div><pre>{escape(step)}</pre></div>"
        )
    return "<h4>Steps</h4>" + "".join(rows)


def _said(g: Grading, i: int) -> str:
    if not g.parsed:
        return '<span class="failed">failed</span>'
    steps = g.steps or []
    if i >= len(steps) or steps[i] not in (0, 1):
        return '<span class="failed">none</span>'
    return '<span class="yes">yes</span>' if steps[i] == 1 else '<span class="no">no</span>'


def _run(item: Item, g: Grading) -> str:
    head = f"<h4>Run {g.run}</h4>"
    if not g.parsed:
        head += f'<p class="failed">failed: {escape(g.reason)}</p>'
    elif item.kind == "locations":
        found = "".join(
            f"<li><b>{escape(e['location'])}</b>: {escape(e['description'])}</li>"
            for e in g.errors or []
        )
        head += f"<ul>{found or '<li>no error found</li>'}</ul>"
    modules = g.details.get("modules") or []
    for m in modules:
        verdict = m.get("verdict", "not verified")
        issues = "".join(
            f"<li>{escape(i['location'])}: {escape(i['description'])}</li>"
            for i in m.get("issues", [])
        )
        head += (
            f'<details class="inner"><summary>module {escape(m["id"])} ({escape(m["kind"])}'
            f"{', ' + escape(m['label']) if m.get('label') else ''}): {escape(verdict)}</summary>"
            f"<pre>{escape(m['statement'])}</pre><pre>{escape(m['proof'])}</pre>"
            f"<ul>{issues}</ul></details>"
        )
    for n, attempt in enumerate(g.details.get("attempts") or []):
        if attempt["errors"]:
            errors = "".join(f"<li>{escape(e)}</li>" for e in attempt["errors"])
            head += f"<p>rewrite {n + 1} rejected:</p><ul>{errors}</ul>"
    for key, title in (("output", "judge output"), ("calibration", "calibration")):
        if g.details.get(key):
            head += _folded(title, g.details[key])
    return head


def _folded(title: str, text: str) -> str:
    return (
        f'<details class="inner"><summary>{escape(title)}</summary>'
        f"<pre>{escape(text)}</pre></details>"
    )
