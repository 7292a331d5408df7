"""The terminal report: the paper table with pass@k columns, or two runs side by side."""

from __future__ import annotations

from collections.abc import Callable

from proofeval.metrics import Breakdown, RunMetrics
from proofeval.model import Verdict
from proofeval.report.run_data import RunData
from proofeval.report.table import Column, category_table, format_grid, format_table

TOTAL = "Total"
SHOWN_UNEVALUATED = 5


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def points(a: float | None, b: float | None) -> str:
    """b - a in percentage points."""
    if a is None or b is None:
        return "-"
    shown = round(100 * (b - a), 1)
    return f"{shown + 0.0:+.1f}"  # + 0.0 turns -0.0 into 0.0


def rows_by_name(metrics: RunMetrics) -> dict[str, Breakdown]:
    return {**metrics.categories, TOTAL: metrics.overall}


def pass_columns(metrics: RunMetrics) -> list[Column]:
    rows = rows_by_name(metrics)
    return [
        Column(f"pass@{k}", {name: percent(b.pass_at_k.get(k)) for name, b in rows.items()})
        for k in metrics.ks
    ]


def format_run(run: RunData) -> str:
    """What produced the run, the paper table with a pass@k column per reportable k, then
    the summary lines; for a run with arms, the arms side by side, then a block each."""
    if not run.arms:
        return format_one(run)
    arms = run.every_arm()
    blocks = [f"== arm {arm.arm} ({arm.path}) ==\n{format_one(arm)}" for arm in arms]
    head = (
        f"{run.path}: {plural(len(arms), 'arm')} side by side (each its own settings, not pooled)"
    )
    return "\n\n".join([head + "\n" + format_grid(arms_lines(arms), total=False), *blocks])


def arms_lines(arms: list[RunData]) -> list[tuple[str, ...]]:
    """Header and a row per arm: its model, the whole run's counts and pass@k."""
    ks = sorted({k for arm in arms for k in arm.metrics.ks})
    header = ("Arm", "Model", "Problems", "Attempts", "Eval", "OK", "OK/Tot",
              *(f"pass@{k}" for k in ks))  # fmt: skip
    lines = [header]
    for arm in arms:
        total = arm.metrics.overall
        ident = arm.info.get("identity")
        model = str(ident.get("model", "?")) if isinstance(ident, dict) else "?"
        counts = (total.problems, total.attempts, total.checked, total.verdicts.get(Verdict.OK, 0))
        lines.append((arm.arm, model, *map(str, counts), percent(total.ok_share),
                      *(percent(total.pass_at_k.get(k)) for k in ks)))  # fmt: skip
    return lines


def format_one(run: RunData) -> str:
    """One arm's report: what produced it, its table, its summary lines."""
    table = format_table(category_table(run.results, run.problems), pass_columns(run.metrics))
    head = provenance_lines(run.info)
    if run.round:
        head.append(
            f"figures after repair round {run.round}: each sample's first OK, else its last "
            "round (round 0 alone: the rounds table below)"
        )
    return "\n".join([*head, *([""] if head else []), table, "", *summary_lines(run.metrics)])


def provenance_lines(info: dict[str, object]) -> list[str]:
    """What produced a run (runs/manifest.py), in a few lines; none for a run that kept
    no record of it (checked from an answers file, or by an older proofeval)."""
    ident, about = info.get("identity"), info.get("provenance")
    if not isinstance(ident, dict) or not isinstance(about, dict):
        return []
    sampled = ", ".join(
        f"{key} {ident[key]}"
        for key in ("temperature", "top_p", "max_tokens", "reasoning_effort")
        if ident.get(key) is not None
    )
    template = f"{ident['template']} (sha256 {str(ident['template_sha256'])[:12]})"
    resumed = info.get("resumed")
    times = f"started {about['started']}, ended {info.get('ended', '(not finished)')}"
    if isinstance(resumed, list) and resumed:
        times += f", resumed {len(resumed)}x"
    retried = info.get("retried_requests")
    if isinstance(retried, dict) and retried:
        by_cause = ", ".join(f"{cause} x{n}" for cause, n in sorted(retried.items()))
        sampled += ("; " if sampled else "") + f"requests retried: {by_cause}"
    return [
        f"model: {ident['model']} at {ident['endpoint']}" + (f"; {sampled}" if sampled else ""),
        f"template: {template}; timeout {ident['timeout']} s; replay {ident['replay']}",
        *procedure_lines(ident),
        f"checked by: {'; '.join(map(str, about['provers'])) or '(no prover recorded)'}",
        f"{about['proofeval']}; {times}",
        f"command: {about['command']}",
    ]


def procedure_lines(ident: dict) -> list[str]:
    """The repair rounds' or the agent's settings, when the run has them."""
    if ident.get("agent"):
        return [
            f"agent: at most {ident['agent_tool_calls']} tool calls, {ident['agent_tokens']} "
            f"tokens and {ident['agent_seconds']:g} s per problem and sample"
        ]
    if ident.get("rounds"):
        sha = str(ident.get("repair_template_sha256"))[:12]
        return [
            f"repair: up to {ident['rounds']} rounds, {ident['repair_template']} (sha256 {sha})"
        ]
    return []


def summary_lines(metrics: RunMetrics) -> list[str]:
    overall = metrics.overall
    lines = []
    if overall.pass_at_1 is not None:
        est = overall.pass_at_1
        error = "" if est.stderr is None else f" ± {percent(est.stderr)} (standard error)"
        lines.append(
            f"pass@1 {percent(est.mean)}{error}: avg of {sample_range(metrics)} "
            f"over {plural(est.problems, 'problem')}"
        )
    if overall.checked:
        lines.append(f"timeouts: {percent(overall.timeout_share)} of checked attempts")
    if overall.unchecked:
        lines.append(f"unchecked attempts: {overall.unchecked} (never OK in any rate)")
    if metrics.unevaluated:
        lines.append(unevaluated_line(metrics))
    gen = metrics.generation
    if gen is not None:
        models = f" from {', '.join(gen.models)}" if gen.models else ""
        lines.append(
            f"generation: {gen.completions} completions{models}; per completion "
            f"{gen.mean_prompt_tokens:.0f} prompt + {gen.mean_completion_tokens:.0f} "
            f"completion tokens, {gen.mean_seconds:.1f} s"
        )
    return lines


def unevaluated_line(metrics: RunMetrics) -> str:
    """The problems counted as unsolved for want of a checked attempt, named."""
    shown = ", ".join(metrics.unevaluated[:SHOWN_UNEVALUATED])
    more = "" if len(metrics.unevaluated) <= SHOWN_UNEVALUATED else ", ..."
    none = metrics.overall.unattempted
    without = f", {none} of them with no attempt at all" if none else ""
    return (
        f"unsolved, never checked: {plural(len(metrics.unevaluated), 'problem')} with no "
        f"checked attempt ({shown}{more}){without}; counted as failures in every rate"
    )


def sample_range(metrics: RunMetrics) -> str:
    ns = [s.n for s in metrics.scores]
    low, high = min(ns), max(ns)
    return plural(low, "sample") if low == high else f"{low}-{high} samples"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def common_ks(a: RunMetrics, b: RunMetrics) -> tuple[int, ...]:
    return tuple(k for k in a.ks if k in b.ks)


def comparison_lines(a: RunMetrics, b: RunMetrics) -> list[tuple[str, ...]]:
    """Header and rows: per category, each figure for A, for B, and B - A in points."""
    figures: list[tuple[str, Callable[[Breakdown], float | None]]] = [
        ("OK/Tot", lambda r: r.ok_share),
        *((f"pass@{k}", _at(k)) for k in common_ks(a, b)),
    ]
    header = ["Category"]
    for name, _ in figures:
        header += [f"A {name}", f"B {name}", "B-A"]
    rows_a, rows_b = rows_by_name(a), rows_by_name(b)
    names = sorted((set(rows_a) | set(rows_b)) - {TOTAL}) + [TOTAL]
    lines = [tuple(header)]
    for name in names:
        cells = [name]
        for _, figure in figures:
            va = figure(rows_a[name]) if name in rows_a else None
            vb = figure(rows_b[name]) if name in rows_b else None
            cells += [percent(va), percent(vb), points(va, vb)]
        lines.append(tuple(cells))
    return lines


def _at(k: int) -> Callable[[Breakdown], float | None]:
    return lambda row: row.pass_at_k.get(k)


def format_comparison(a: RunData, b: RunData) -> str:
    table = format_grid(comparison_lines(a.metrics, b.metrics))
    parts = [f"A: {a.path}", f"B: {b.path}", "", table]
    for label, run in (("A", a), ("B", b)):
        parts += ["", f"{label}:", *("  " + line for line in summary_lines(run.metrics))]
    return "\n".join(parts)
