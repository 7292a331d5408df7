"""Metrics of repair rounds (`run --rounds R`): pass@k after r rounds for r = 0..R, with
the tokens and checker seconds spent up to that round, as a text table, JSON and a plot.

A sample counts as solved after r rounds when one of its rounds 0..r is OK (a sample stops
at its first OK). Round 0 is the ordinary run; n is a problem's checked round-0 samples.
Tokens are prompt plus completion tokens as the endpoint reported them.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from proofeval.metrics import pass_at_k, report_ks
from proofeval.model import Verdict
from proofeval.store import RunStore


@dataclass(frozen=True)
class SampleRound:
    problem_id: str
    sample: int
    round: int
    ok: bool
    tokens: int
    checker_seconds: float


@dataclass(frozen=True)
class RoundRow:
    """The run after `round` rounds of repair."""

    round: int
    problems: int
    solved: int  # problems with at least one solved sample
    pass_at: dict[int, float]
    tokens: int
    checker_seconds: float


def load_rounds(run_dir: Path) -> list[SampleRound]:
    """Every checked round of every sample kept in RUN_DIR's store (round 0 included)."""
    if not (run_dir / "proofeval.sqlite").is_file():
        return []
    store = RunStore(run_dir)
    try:
        gens = {(g.problem_id, g.sample): g for g in store.generations()}
        found = [
            SampleRound(r.problem_id, r.attempt, 0, r.verdict is Verdict.OK,
                        _tokens(gens.get((r.problem_id, r.attempt))), r.seconds or 0.0)
            for r in store.results()
            if r.verdict is not None and (r.problem_id, r.attempt) in gens
        ]  # fmt: skip
        for r in store.rounds():
            if r.outcome is None:
                continue
            found.append(
                SampleRound(r.problem_id, r.sample, r.round, r.outcome.verdict is Verdict.OK,
                            _tokens(r.generation), r.outcome.seconds)
            )  # fmt: skip
    finally:
        store.close()
    return found


def _tokens(gen) -> int:
    return 0 if gen is None else gen.prompt_tokens + gen.completion_tokens


def round_rows(rounds: list[SampleRound]) -> list[RoundRow]:
    """One row per r = 0..the last round any sample reached."""
    if not rounds:
        return []
    samples: dict[str, set[int]] = defaultdict(set)
    for s in rounds:
        if s.round == 0:
            samples[s.problem_id].add(s.sample)
    ks = report_ks(len(v) for v in samples.values())
    rows = []
    for r in range(max(s.round for s in rounds) + 1):
        upto = [s for s in rounds if s.round <= r and s.sample in samples.get(s.problem_id, ())]
        solved = {(s.problem_id, s.sample) for s in upto if s.ok}
        pass_at = {}
        for k in ks:
            values = [
                pass_at_k(len(n), sum((pid, i) in solved for i in n), k)
                for pid, n in samples.items()
                if len(n) >= k
            ]
            pass_at[k] = sum(values) / len(values) if values else 0.0
        rows.append(
            RoundRow(r, len(samples), len({pid for pid, _ in solved}), pass_at,
                     sum(s.tokens for s in upto), sum(s.checker_seconds for s in upto))
        )  # fmt: skip
    return rows


def format_rounds(rounds: list[SampleRound]) -> str:
    rows = round_rows(rounds)
    if not rows:
        return "no repair rounds"
    ks = list(rows[0].pass_at)
    head = ["round", "solved", *(f"pass@{k}" for k in ks), "tokens", "checker s"]
    lines = [head] + [
        [str(r.round), f"{r.solved}/{r.problems}", *(f"{100 * r.pass_at[k]:.1f}%" for k in ks),
         str(r.tokens), f"{r.checker_seconds:.1f}"]
        for r in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    return "After r rounds of repair (cumulative tokens and checker seconds):\n" + "\n".join(text)


def rounds_document(rounds: list[SampleRound]) -> list[dict]:
    return [
        {"round": r.round, "problems": r.problems, "solved": r.solved,
         "pass_at_k": {str(k): round(v, 6) for k, v in r.pass_at.items()},
         "tokens": r.tokens, "checker_seconds": round(r.checker_seconds, 3)}
        for r in round_rows(rounds)
    ]  # fmt: skip


def rounds_plot(rounds: list[SampleRound]) -> bytes | None:
    """Problems solved against rounds and against tokens spent (PNG), or None without
    repair rounds."""
    rows = round_rows(rounds)
    if len(rows) < 2:
        return None
    from proofeval.report import plots

    fig = plots.figure(10, 3.6)
    left, right = fig.subplots(1, 2)
    solved = [r.solved for r in rows]
    left.plot([r.round for r in rows], solved, marker="o", color=plots.RUN_COLOURS[0])
    left.set_xlabel("repair rounds")
    left.set_xticks([r.round for r in rows])
    right.plot([r.tokens for r in rows], solved, marker="o", color=plots.RUN_COLOURS[0])
    right.set_xlabel("tokens spent")
    for ax in (left, right):
        ax.set_ylabel("problems solved")
        ax.set_ylim(0, max(rows[0].problems, 1))
        plots.style_axes(ax)
    return plots.png_bytes(fig)


@dataclass(frozen=True)
class AgentSummary:
    conversations: int
    tool_calls: int
    tool_errors: int
    by_tool: dict[str, int]
    tokens: int
    checker_seconds: float  # of the check and submit calls


def agent_summary(run_dir: Path) -> AgentSummary | None:
    """What an agentic run's conversations spent (None: no agent steps in the run)."""
    if not (run_dir / "proofeval.sqlite").is_file():
        return None
    store = RunStore(run_dir)
    try:
        steps = store.agent_steps()
        gens = store.generations()
    finally:
        store.close()
    if not steps:
        return None
    tools = [body for _, _, _, kind, body, _ in steps if kind == "tool"]
    by_tool: dict[str, int] = defaultdict(int)
    seconds = 0.0
    for body in tools:
        by_tool[str(body.get("name"))] += 1
        result = body.get("result")
        if isinstance(result, dict) and isinstance(result.get("seconds"), int | float):
            seconds += result["seconds"]
    errors = sum(isinstance(b.get("result"), dict) and "error" in b["result"] for b in tools)
    conversations = len({(pid, sample) for pid, sample, *_ in steps})
    tokens = sum(g.prompt_tokens + g.completion_tokens for g in gens)
    return AgentSummary(conversations, len(tools), errors, dict(by_tool), tokens, seconds)


def format_agent(run_dir: Path) -> str:
    s = agent_summary(run_dir)
    if s is None:
        return "no agent conversations"
    calls = ", ".join(f"{name} {n}" for name, n in sorted(s.by_tool.items()))
    return (
        f"Agent: {s.conversations} conversations, {s.tool_calls} tool calls ({calls}), "
        f"{s.tool_errors} answered with an error; {s.tokens} tokens, "
        f"{s.checker_seconds:.1f} checker seconds"
    )


def rounds_sections(run_dir: Path) -> dict:
    """The report JSON's additions: "rounds" (pass@k after r rounds) when the run has
    repair rounds, "agent" (what the conversations spent) when it is agentic."""
    doc: dict = {}
    rounds = load_rounds(run_dir)
    if any(s.round > 0 for s in rounds):
        doc["rounds"] = rounds_document(rounds)
    summary = agent_summary(run_dir)
    if summary is not None:
        doc["agent"] = asdict(summary)
    return doc


def rounds_html(run_dir: Path) -> str:
    """The HTML report's section on repair rounds (a table and the plot), or ""."""
    rounds = load_rounds(run_dir)
    rows = round_rows(rounds)
    if len(rows) < 2:
        return ""
    ks = list(rows[0].pass_at)
    head = "".join(f"<th>{h}</th>" for h in ["round", "solved", *(f"pass@{k}" for k in ks),
                                            "tokens", "checker s"])  # fmt: skip
    body = "".join(
        "<tr>" + "".join(f"<td>{c}</td>" for c in [r.round, f"{r.solved}/{r.problems}",
        *(f"{100 * r.pass_at[k]:.1f}%" for k in ks), r.tokens, f"{r.checker_seconds:.1f}"])
        + "</tr>"
        for r in rows
    )  # fmt: skip
    png = rounds_plot(rounds)
    image = ""
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        image = f'<figure class="wide"><img src="data:image/png;base64,{data}" ' \
                'alt="problems solved against repair rounds and tokens"></figure>'  # fmt: skip
    return (
        "<h2>Repair rounds</h2><p>After r rounds of repair (cumulative tokens and checker "
        f'seconds).</p><table class="figures"><tr>{head}</tr>{body}</table>'
        f'<section class="pictures">{image}</section>'
    )
