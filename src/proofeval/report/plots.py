"""The report's pictures as PNG bytes: the pass@k curve, per-category pass@1, verdict shares.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, so no global backend state
and nothing that wants a display). Each function takes (label, metrics) pairs, one per run,
and returns None when there is nothing to draw.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from functools import wraps

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, PercentFormatter

from proofeval.metrics import RunMetrics
from proofeval.model import Verdict

Runs = Sequence[tuple[str, RunMetrics]]

VERDICT_COLOURS = {
    Verdict.OK: "#2e8b57",
    Verdict.FAIL: "#d9534f",
    Verdict.TIMEOUT: "#f0ad4e",
    Verdict.ERROR: "#8e6fb8",
    Verdict.CHEATING: "#7a1f5c",
}
UNCHECKED_COLOUR = "#ced4da"
# One per run or arm side by side (after eight they repeat).
RUN_COLOURS = (
    "#1f5fa8", "#e07b00", "#2a9d8f", "#9b2c9b", "#6b8e23", "#8c564b", "#17becf", "#444444"
)  # fmt: skip
CATEGORY_COLOURS = ("#4c9f70", "#c8553d", "#8e6fb8", "#d4a017", "#3b8ea5", "#b5838d", "#6c757d")
DPI = 144
# Sized for the page: a half-width picture is shown at about 0.65 of its pixels.
STYLE = {"font.size": 12, "axes.titlesize": 13, "legend.fontsize": 11}


def _styled(draw: Callable[..., bytes | None]) -> Callable[..., bytes | None]:
    @wraps(draw)
    def styled(*args, **kwargs) -> bytes | None:
        with rc_context(STYLE):
            return draw(*args, **kwargs)

    return styled


def figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def run_colour(i: int) -> str:
    return RUN_COLOURS[i % len(RUN_COLOURS)]


def style_axes(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e5e7eb", linewidth=0.8)
    ax.set_axisbelow(True)


@_styled
def pass_at_k_curve(runs: Runs) -> bytes | None:
    """pass@k against k (log scale): each run's overall curve; for one run, its categories."""
    ks = sorted({k for _, m in runs for k in m.ks})
    if not ks:
        return None
    fig = figure(6.0, 3.8)
    ax = fig.add_subplot()
    for i, (label, m) in enumerate(runs):
        xs = list(m.ks)
        ys = [100 * m.overall.pass_at_k[k] for k in xs]
        name = "all problems" if len(runs) == 1 else label
        ax.plot(xs, ys, marker="o", linewidth=2.4, color=run_colour(i), label=name, zorder=3)
    if len(runs) == 1:
        _category_curves(ax, runs[0][1])
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ks))
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel("k (attempts per problem)")
    ax.set_ylabel("pass@k")
    ax.set_title("pass@k", loc="left", fontweight="bold")
    style_axes(ax)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return png_bytes(fig)


def _category_curves(ax, m: RunMetrics) -> None:
    for i, (name, row) in enumerate(m.categories.items()):
        xs = [k for k in m.ks if k in row.pass_at_k]
        ys = [100 * row.pass_at_k[k] for k in xs]
        colour = CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)]
        ax.plot(xs, ys, marker=".", linestyle="--", linewidth=1.2, color=colour, label=name)


@_styled
def category_bars(runs: Runs) -> bytes | None:
    """pass@1 per category with its standard error, one bar per run in each group."""
    names = sorted({name for _, m in runs for name in m.categories})
    if not names or all(m.overall.pass_at_1 is None for _, m in runs):
        return None
    fig = figure(6.0, 1.3 + 0.5 * len(names) * len(runs))
    ax = fig.add_subplot()
    height = 0.8 / len(runs)
    for i, (label, m) in enumerate(runs):
        offset = (i - (len(runs) - 1) / 2) * height
        rows = [m.categories.get(n) for n in names]
        # A category this run lacks, or has nothing checked in, gets no bar.
        shown = [(j, r.pass_at_1) for j, r in enumerate(rows) if r and r.pass_at_1]
        ys = [j + offset for j, _ in shown]
        means = [100 * e.mean for _, e in shown]
        errors = [0.0 if e.stderr is None else 100 * e.stderr for _, e in shown]
        ax.barh(
            ys,
            means,
            height=height * 0.9,
            xerr=errors,
            color=run_colour(i),
            error_kw={"ecolor": "#333", "capsize": 3, "linewidth": 1},
            label=label,
        )
        for y, mean, err in zip(ys, means, errors, strict=True):
            ax.text(mean + err + 1.5, y, f"{mean:.1f}%", va="center")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.xaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel("pass@1 (avg of n), bars: ± standard error")
    ax.set_title("pass@1 by category", loc="left", fontweight="bold")
    style_axes(ax)
    ax.grid(False, axis="y")
    if len(runs) > 1:
        ax.legend(frameon=False, loc="lower right")
    return png_bytes(fig)


@_styled
def verdict_bars(m: RunMetrics, label: str = "") -> bytes | None:
    """Each category's attempts by verdict, as shares of its attempts (stacked to 100%).

    A wide picture: the page shows it across the whole width."""
    rows = {**m.categories, "Total": m.overall}
    rows = {name: row for name, row in rows.items() if row.attempts}
    if not rows:
        return None
    fig = figure(12.8, 1.3 + 0.42 * len(rows))
    ax = fig.add_subplot()
    names = list(rows)
    left = [0.0] * len(names)
    parts = [(v.value, VERDICT_COLOURS[v], [r.verdicts[v] for r in rows.values()]) for v in Verdict]
    parts.append(("unchecked", UNCHECKED_COLOUR, [r.unchecked for r in rows.values()]))
    for name, colour, counts in parts:
        shares = [100 * c / r.attempts for c, r in zip(counts, rows.values(), strict=True)]
        if any(shares):
            ax.barh(names, shares, left=left, color=colour, label=name, height=0.7)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.xaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel("share of attempts")
    title = "verdicts by category" + (f", run {label}" if label else "")
    ax.set_title(title, loc="left", fontweight="bold")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return png_bytes(fig)


@_styled
def precision_recall(curves: dict[str, Sequence[tuple[int, float | None, float | None]]]):
    """Precision against recall, one line per curve of (k, precision, recall) points, each
    point labelled with its k; None when no curve has a defined point."""
    shown = {
        name: [(k, p, r) for k, p, r in points if p is not None and r is not None]
        for name, points in curves.items()
    }
    shown = {name: points for name, points in shown.items() if points}
    if not shown:
        return None
    fig = figure(6.0, 4.2)
    ax = fig.add_subplot()
    for i, (name, points) in enumerate(shown.items()):
        colour = CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)]
        xs = [100 * r for _, _, r in points]
        ys = [100 * p for _, p, _ in points]
        ax.plot(xs, ys, marker="o", linewidth=2, color=colour, label=name)
        for (k, _, _), x, y in zip(points, xs, ys, strict=True):
            ax.annotate(f"k={k}", (x, y), textcoords="offset points", xytext=(5, 5), fontsize=9)
    ax.set_xlim(0, 112)  # room for the k labels of points at 100%
    ax.set_ylim(0, 108)
    ax.xaxis.set_major_formatter(PercentFormatter())
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel("recall (errors found)")
    ax.set_ylabel("precision")
    ax.set_title("error finding over k runs", loc="left", fontweight="bold")
    style_axes(ax)
    ax.legend(frameon=False, loc="lower left")
    return png_bytes(fig)
