"""The report as one self-contained HTML page: tables, pictures, and every problem's attempts.

Nothing is loaded from elsewhere: the CSS and the one script (the filters, report/filters.py)
are inline, the pictures are PNG data URIs, and the page's Content-Security-Policy allows
nothing else. Every text that comes from a run (ids, categories, statements, prompts, model
output, messages, agent transcripts) is untrusted and passes through `escape`.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from proofeval.files import write_text_atomically
from proofeval.model import Attempt, Generation, Problem, Verdict
from proofeval.report import filters, plots
from proofeval.report.every_round import every_round_html, load_every_round
from proofeval.report.rounds import agent_summary, format_agent, rounds_html
from proofeval.report.run_data import RunData
from proofeval.report.table import HEADER, category_table
from proofeval.report.terminal import (
    arms_lines,
    comparison_lines,
    pass_columns,
    percent,
    provenance_lines,
    summary_lines,
)
from proofeval.report.transcripts import load_transcripts, transcript_html
from proofeval.store import ResultRow

CSS = """
:root { --ok: #2e8b57; --fail: #d9534f; --timeout: #f0ad4e; --error: #8e6fb8;
  --cheating: #7a1f5c; --unchecked: #ced4da; --ink: #1f2933; --muted: #616e7c;
  --line: #e4e7eb; --bg: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 12px; }
h3 { font-size: 16px; margin: 22px 0 8px; color: var(--muted); }
.run { color: var(--muted); margin: 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace;
  font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(140px, 1fr));
  gap: 12px; margin-top: 20px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 12px 16px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; }
.card .value { font-size: 24px; font-weight: 650; }
.card .detail { color: var(--muted); font-size: 12px; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 16px; overflow-x: auto; }
table.figures { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.figures th, table.figures td { padding: 6px 10px; text-align: right;
  border-bottom: 1px solid var(--line); white-space: nowrap; }
table.figures th { font-size: 12px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .03em; border-bottom: 2px solid var(--line); }
table.figures th:first-child, table.figures td:first-child { text-align: left; }
table.figures tr.total td { font-weight: 650; border-top: 2px solid var(--ink);
  border-bottom: none; }
table.figures td.pos { color: var(--ok); }
table.figures td.neg { color: var(--fail); }
table.figures th.k, table.figures td.k { background: #f3f7fc; }
table.figures th.group, table.figures td.group { border-left: 1px solid var(--line); }
table.figures th.group[colspan] { text-align: center; }
table.figures.compact th, table.figures.compact td { padding: 5px 7px; font-size: 14px; }
table.figures.compact th { font-size: 11px; }
.notes { color: var(--muted); font-size: 13px; margin: 10px 0 0; padding-left: 18px; }
.pictures { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr));
  gap: 16px; }
.pictures figure { margin: 0; background: #fff; border: 1px solid var(--line);
  border-radius: 10px; padding: 10px; display: flex; align-items: center; }
.pictures figure.wide { grid-column: 1 / -1; }
.pictures img { width: 100%; height: auto; display: block; }
details.problem { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  margin: 6px 0; }
details.problem > summary { cursor: pointer; padding: 8px 12px; display: flex;
  align-items: center; gap: 12px; flex-wrap: wrap; }
details.problem[open] > summary { border-bottom: 1px solid var(--line); }
.pid { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px;
  font-weight: 600; }
.tag { font-size: 12px; color: var(--muted); background: var(--bg); border-radius: 999px;
  padding: 1px 8px; }
.score { margin-left: auto; font-size: 13px; color: var(--muted);
  font-variant-numeric: tabular-nums; }
.chips { display: inline-flex; gap: 3px; }
.chip { width: 12px; height: 12px; border-radius: 3px; display: inline-block; }
.chip.OK { background: var(--ok); } .chip.FAIL { background: var(--fail); }
.chip.TIMEOUT { background: var(--timeout); } .chip.ERROR { background: var(--error); }
.chip.CHEATING { background: var(--cheating); } .chip.unchecked { background: var(--unchecked); }
.body { padding: 4px 16px 14px; }
.runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 20px; }
.runs > div { min-width: 0; }
.body h4 { margin: 12px 0 4px; font-size: 13px; color: var(--muted); }
pre { background: #f8f9fb; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  margin: 4px 0; white-space: pre-wrap; word-break: break-word; font-size: 12.5px;
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; max-height: 360px; overflow: auto; }
.attempt { border-left: 4px solid var(--unchecked); padding: 2px 0 2px 10px; margin: 10px 0; }
.attempt.OK { border-color: var(--ok); } .attempt.FAIL { border-color: var(--fail); }
.attempt.TIMEOUT { border-color: var(--timeout); } .attempt.ERROR { border-color: var(--error); }
.attempt.CHEATING { border-color: var(--cheating); }
.meta { font-size: 13px; display: flex; gap: 14px; flex-wrap: wrap; align-items: baseline; }
.verdict { font-weight: 700; font-size: 12px; letter-spacing: .04em; }
.message { color: var(--muted); font-family: ui-monospace, "DejaVu Sans Mono", monospace;
  font-size: 12px; }
details.inner > summary { cursor: pointer; color: var(--muted); font-size: 13px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12.5px; }
"""

# Characters HTML forbids in text (a browser would drop or replace them): controls but for
# tab, LF, CR.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def escape(text: str) -> str:
    """html.escape, and every control character shown as its escape (NUL as \\x00)."""
    return CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", html.escape(text))


DEFINITIONS = (
    "pass@k: the unbiased estimator 1 - C(n-c, k)/C(n, k) per problem (n checked attempts, "
    "c OK), averaged over problems with a checked attempt. pass@1: the mean of c/n over "
    "those problems; ± is the standard error of that mean over problems. OK/Tot counts "
    "attempts, unchecked ones as not OK; unchecked attempts count in no other rate."
)


def render(runs: Sequence[RunData]) -> str:
    """The page for one run, for two (labelled A and B) side by side, or for one run's arms
    (`run --arm`, each labelled "arm NAME") side by side, never pooled."""
    labelled = _labelled(runs)
    count = len(labelled)
    title = " vs ".join(str(run.path) for run in runs)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        filters.head(),
        f"<title>proofeval report: {escape(title)}</title>",
        f"<style>{CSS}{filters.CSS}</style></head><body><main>",
        "<h1>proofeval report</h1>",
        *_arms_line(runs, count),
        *(_run_line(label, run, count) for label, run in labelled),
        *(_cards(label, run, count) for label, run in labelled),
        *_tables(labelled),
        *_rounds(labelled, len(runs)),
        _pictures(labelled),
        "<h2>Problems</h2>",
        _problems(labelled),
        f"<footer>{escape(DEFINITIONS)}</footer>",
        f"</main>{filters.script()}</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _labelled(runs: Sequence[RunData]) -> list[tuple[str, RunData]]:
    if len(runs) == 1 and runs[0].arms:
        return [(f"arm {arm.arm}", arm) for arm in runs[0].every_arm()]
    return list(zip(("A", "B"), runs, strict=False))


def token(label: str) -> str:
    """A label as the page's data and anchors use it: A, B, or the arm's name (which has no
    space: runs/arms.py)."""
    return label.rsplit(" ", 1)[-1]


def _arms_line(runs: Sequence[RunData], count: int) -> list[str]:
    if len(runs) == 1 and runs[0].arms:
        said = f"{runs[0].path}: {count} arms side by side (each its own settings, not pooled)"
        return [f'<p class="run">{escape(said)}</p>']
    return [
        f'<p class="run">{escape(f"{label} has arms ({names}): report it alone to see them")}</p>'
        for label, run in zip("AB", runs, strict=False)
        if run.arms and (names := ", ".join(arm.arm for arm in run.arms))
    ]


def _rounds(labelled: list[tuple[str, RunData]], runs: int) -> list[str]:
    """Each arm's repair rounds (of a single run: its own); none for two runs compared."""
    if runs > 1:
        return []
    shown = [(label, rounds_html(run.path)) for label, run in labelled]
    if len(labelled) == 1:
        return [html for _, html in shown]
    return [f"<h3>{escape(label)}</h3>{html}" for label, html in shown if html]


def _run_line(label: str, run: RunData, count: int) -> str:
    prefix = f"{label}: " if count > 1 else ""
    lines = "".join(f"<br>{escape(line)}" for line in provenance_lines(run.info))
    if agent_summary(run.path) is not None:
        lines += f"<br>{escape(format_agent(run.path))}"
    return f'<p class="run">{escape(prefix + str(run.path))}{lines}</p>'


def _card(label: str, value: str, detail: str = "") -> str:
    return (
        f'<div class="card"><div class="label">{escape(label)}</div>'
        f'<div class="value">{escape(value)}</div><div class="detail">{escape(detail)}</div></div>'
    )


def _cards(label: str, run: RunData, count: int) -> str:
    prefix = f"{label} · " if count > 1 else ""
    if run.round:  # the figures are of each sample's final repair round
        prefix += f"after round {run.round} · "
    m = run.metrics
    overall = m.overall
    est = overall.pass_at_1
    cards = []
    if est is not None:
        error = "" if est.stderr is None else f"± {percent(est.stderr)} standard error"
        cards.append(_card(prefix + "pass@1", percent(est.mean), error))
    if m.ks and m.ks[-1] > 1:
        top = m.ks[-1]
        cards.append(_card(f"{prefix}pass@{top}", percent(overall.pass_at_k.get(top))))
    cards += [
        _card(prefix + "problems", f"{overall.evaluated}", f"evaluated, of {overall.problems}"),
        _card(prefix + "attempts", f"{overall.checked}", f"checked, of {overall.attempts}"),
        _card(prefix + "timeouts", percent(overall.timeout_share), "of checked attempts"),
    ]
    if m.generation is not None:
        gen = m.generation
        prompt = f"per completion, prompt {gen.mean_prompt_tokens:.0f}"
        tokens = f"{gen.mean_completion_tokens:.0f}"
        cards.append(_card(prefix + "tokens", tokens, prompt))
        cards.append(_card(prefix + "generation", f"{gen.mean_seconds:.1f} s", "per completion"))
    return f'<section class="cards">{"".join(cards)}</section>'


def _tables(labelled: list[tuple[str, RunData]]) -> list[str]:
    parts = []
    if labelled[0][0].startswith("arm "):
        lines = arms_lines([run for _, run in labelled])
        parts += ["<h2>Arms side by side</h2>", _grid(lines, total=False)]
    elif len(labelled) == 2:
        (_, a), (_, b) = labelled
        lines = comparison_lines(a.metrics, b.metrics)
        parts += ["<h2>A and B by category</h2>", _comparison_table(lines)]
    for label, run in labelled:
        heading = "By category" if len(labelled) == 1 else f"{label} by category"
        parts += [f"<h2>{escape(heading)}</h2>", _paper_table(run)]
    return parts


def _paper_table(run: RunData) -> str:
    columns = pass_columns(run.metrics)
    header = (*HEADER, *(c.header for c in columns))
    rows = [
        (*row.cells(), *(c.cells.get(row.category, "-") for c in columns))
        for row in category_table(run.results, run.problems)
    ]
    notes = "".join(f"<li>{escape(line)}</li>" for line in summary_lines(run.metrics))
    return _grid([header, *rows], k_columns=len(columns), notes=notes)


def _grid(
    lines: Sequence[Sequence[str]], k_columns: int = 0, notes: str = "", total: bool = True
) -> str:
    """An HTML table of text cells: header first, the last row the total (if `total`)."""
    width = len(lines[0])

    def cls(i: int) -> str:
        return ' class="k"' if i >= width - k_columns else ""

    head = "".join(f"<th{cls(i)}>{escape(c)}</th>" for i, c in enumerate(lines[0]))
    rows = [
        "".join(f"<td{cls(i)}>{escape(c)}</td>" for i, c in enumerate(line)) for line in lines[1:]
    ]
    return _panel(f"<tr>{head}</tr>", rows, notes, total=total)


def _panel(
    head: str, rows: list[str], notes: str = "", table_class: str = "figures", total: bool = True
) -> str:
    body = "".join(
        f'<tr class="total">{row}</tr>' if total and n == len(rows) - 1 else f"<tr>{row}</tr>"
        for n, row in enumerate(rows)
    )
    notes_list = f'<ul class="notes">{notes}</ul>' if notes else ""
    return (
        f'<div class="panel"><table class="{table_class}"><thead>{head}</thead>'
        f"<tbody>{body}</tbody></table>{notes_list}</div>"
    )


def _comparison_table(lines: Sequence[Sequence[str]]) -> str:
    """terminal.comparison_lines as a table: a group of A, B, B-A columns per figure."""
    header = lines[0]
    figures = [header[i][2:] for i in range(1, len(header), 3)]
    groups = "".join(f'<th colspan="3" class="group">{escape(f)}</th>' for f in figures)
    subs = '<th class="group">A</th><th>B</th><th>B-A</th>' * len(figures)
    head = f'<tr><th rowspan="2">Category</th>{groups}</tr><tr>{subs}</tr>'
    rows = []
    for line in lines[1:]:
        cells = [f"<td>{escape(line[0])}</td>"]
        for i in range(1, len(line), 3):
            a, b, diff = line[i : i + 3]
            cells.append(f'<td class="group">{escape(a)}</td><td>{escape(b)}</td>')
            cells.append(f"<td{_sign_class(diff)}>{escape(diff)}</td>")
        rows.append("".join(cells))
    return _panel(head, rows, table_class="figures compact")


def _sign_class(diff: str) -> str:
    if diff in ("-", "+0.0"):
        return ""
    return ' class="neg"' if diff.startswith("-") else ' class="pos"'


def _image(png: bytes | None, alt: str, wide: bool = False) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    cls = ' class="wide"' if wide else ""
    return f'<figure{cls}><img src="data:image/png;base64,{data}" alt="{escape(alt)}"></figure>'


def _pictures(labelled: list[tuple[str, RunData]]) -> str:
    runs = [(label, run.metrics) for label, run in labelled]
    images = [
        _image(plots.pass_at_k_curve(runs), "pass@k against k"),
        _image(plots.category_bars(runs), "pass@1 by category"),
        *(
            _image(plots.verdict_bars(m, label if len(runs) > 1 else ""), f"verdicts {label}", True)
            for label, m in runs
        ),
    ]
    shown = "".join(images)
    if not shown:
        return ""
    return f'<h2>Pictures</h2><section class="pictures">{shown}</section>'


def _problems(labelled: list[tuple[str, RunData]]) -> str:
    problems: dict[str, Problem] = {}
    for _, run in labelled:
        for problem in run.problems:
            problems.setdefault(problem.id, problem)
    views = [_RunView(label, run) for label, run in labelled]
    for view in views:
        for pid, category in view.categories.items():
            problems.setdefault(pid, Problem(id=pid, statement="", category=category))
    ordered = sorted(problems.values(), key=lambda p: (p.category, p.id))
    if not ordered:
        return "<p>No problems in this run.</p>"
    groups: dict[str, list[str]] = {}
    for problem in ordered:
        groups.setdefault(problem.category, []).append(_problem(problem, views))
    sections = [
        f'<section class="category"><h3>{escape(category)}</h3>{"".join(shown)}</section>'
        for category, shown in groups.items()
    ]
    verdicts = sorted({v for view in views for v in view.verdicts()}, key=_VERDICT_ORDER.index)
    labels = [(token(view.label), view.label) for view in views]
    bar = filters.filter_bar(verdicts, list(groups), labels, escape)
    return "\n".join([bar, *sections])


_VERDICT_ORDER = [*(v.value for v in Verdict), "unchecked"]


class _RunView:
    """One run's attempts, results and generations, by problem id."""

    def __init__(self, label: str, run: RunData) -> None:
        self.label = label
        self.attempts: dict[str, list[Attempt]] = {}
        for attempt in run.attempts:
            self.attempts.setdefault(attempt.problem_id, []).append(attempt)
        self.results = {(r.problem_id, r.attempt): r for r in run.results}
        self.categories = {r.problem_id: r.category for r in run.results}
        self.generations: dict[tuple[str, int], Generation] = {
            (g.problem_id, g.sample): g for g in run.generations
        }
        self.transcripts = load_transcripts(run.path)
        self.rounds = load_every_round(run.path)

    def verdict_names(self, pid: str) -> list[str]:
        """The verdict of each of the problem's attempts ("unchecked" when none)."""
        rows = [self.results.get((pid, a.index)) for a in self.attempts.get(pid, [])]
        return [_verdict_name(row) for row in rows]

    def verdicts(self) -> set[str]:
        return {v for pid in self.attempts for v in self.verdict_names(pid)}

    def prompt(self, pid: str) -> str | None:
        samples = sorted(s for p, s in self.generations if p == pid)
        return self.generations[(pid, samples[0])].prompt if samples else None


def _problem(problem: Problem, views: list[_RunView]) -> str:
    ident = filters.anchor(problem.id)
    summary = [
        f'<span class="pid">{escape(problem.id)}</span>',
        f'<a class="anchor" href="#{ident}" title="a link to this problem">#</a>',
        f'<span class="tag">{escape(problem.category)}</span>',
    ]
    for view in views:
        prefix = f"{view.label} " if len(views) > 1 else ""
        attempts = view.attempts.get(problem.id, [])
        chips = "".join(_chip(view.results.get((a.problem_id, a.index))) for a in attempts)
        summary.append(f'<span class="chips">{escape(prefix)}{chips}</span>')
    summary.append(f'<span class="score">{escape(_scores(problem.id, views))}</span>')
    body = [
        "<h4>Statement</h4>",
        f"<pre>{escape(problem.statement)}</pre>",
        '<div class="runs">',
        *(f"<div>{_run_section(problem.id, view, len(views))}</div>" for view in views),
        "</div>",
    ]
    verdicts = sorted({v for view in views for v in view.verdict_names(problem.id)})
    solved = [token(view.label) for view in views if "OK" in view.verdict_names(problem.id)]
    data = (
        f'id="{ident}" data-category="{escape("c:" + problem.category)}" '
        f'data-verdicts="{escape(" ".join(verdicts))}" data-solved="{escape(" ".join(solved))}"'
    )
    return (
        f'<details class="problem" {data}><summary>{"".join(summary)}</summary>'
        f'<div class="body">{"".join(body)}</div></details>'
    )


def _scores(pid: str, views: list[_RunView]) -> str:
    texts = []
    for view in views:
        rows = [view.results.get((a.problem_id, a.index)) for a in view.attempts.get(pid, [])]
        checked = [r for r in rows if r is not None and r.verdict is not None]
        ok = sum(r.verdict == Verdict.OK for r in checked)
        prefix = f"{view.label}: " if len(views) > 1 else ""
        texts.append(f"{prefix}{ok}/{len(checked)} OK")
    return " · ".join(texts)


def _verdict_name(row: ResultRow | None) -> str:
    return "unchecked" if row is None or row.verdict is None else row.verdict.value


def _chip(row: ResultRow | None) -> str:
    name = _verdict_name(row)
    return f'<span class="chip {name}" title="{name}"></span>'


def _run_section(pid: str, view: _RunView, count: int) -> str:
    parts = [f"<h4>{escape(view.label)}</h4>"] if count > 1 else []
    prompt = view.prompt(pid)
    if prompt is not None:
        parts.append(
            f'<details class="inner"><summary>Prompt</summary><pre>{escape(prompt)}</pre></details>'
        )
    attempts = view.attempts.get(pid, [])
    if not attempts:
        parts.append("<p>No attempts.</p>")
    for attempt in attempts:
        row = view.results.get((pid, attempt.index))
        gen = view.generations.get((pid, attempt.index))
        parts.append(_attempt(attempt, row, gen))
        rounds = view.rounds.get((pid, attempt.index))
        if rounds:
            parts.append(every_round_html(rounds, escape))
        steps = view.transcripts.get((pid, attempt.index))
        if steps:
            ident = filters.transcript_anchor(pid, token(view.label), attempt.index)
            parts.append(transcript_html(steps, escape, ident))
    return "".join(parts)


def _attempt(attempt: Attempt, row: ResultRow | None, gen: Generation | None) -> str:
    verdict = _verdict_name(row)
    meta = [
        f"<span>#{attempt.index}</span>",
        f'<span class="verdict" style="color: var(--{verdict.lower()})">{escape(verdict)}</span>',
    ]
    if row is not None and row.stage is not None:
        meta.append(f"<span>{escape(row.stage.value)}</span>")
    if row is not None and row.seconds is not None:
        meta.append(f"<span>{row.seconds:.3f} s</span>")
    if gen is not None and gen.completion_tokens:
        meta.append(f"<span>{gen.completion_tokens} tokens</span>")
    if row is not None and row.message:
        meta.append(f'<span class="message">{escape(row.message)}</span>')
    output = ""
    if attempt.output.strip() != attempt.proof.strip():
        output = (
            '<details class="inner"><summary>Model output</summary>'
            f"<pre>{escape(attempt.output)}</pre></details>"
        )
    return (
        f'<div class="attempt {verdict}"><div class="meta">{"".join(meta)}</div>'
        f"<pre>{escape(attempt.proof)}</pre>{output}</div>"
    )


def write_html(runs: Sequence[RunData], directory: Path) -> Path:
    """Write DIR/index.html atomically; its path."""
    path = directory / "index.html"
    write_text_atomically(path, render(runs))
    return path
