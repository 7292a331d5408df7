"""An agentic run's conversations (`run --agent`) in the HTML report: each sample's model
turns, tool calls with their arguments and results, and errors, as the store keeps them
(its agent_steps table; agent-transcripts.jsonl holds the same rows).

Everything in a transcript came from the model or from a tool answering it: it is shown
only through `escape`, cut to TEXT_LIMIT characters a text, and any JSON shape is read
defensively (a store's body may be any JSON value).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofeval.store import FILE_NAME, RunStore

TEXT_LIMIT = 20_000  # characters of one text shown; the rest is in agent-transcripts.jsonl


@dataclass(frozen=True)
class Step:
    kind: str  # "model", "tool" or "error" (runs/agent.py)
    body: Any
    seconds: float


Transcripts = dict[tuple[str, int], list[Step]]  # by (problem id, sample)


def load_transcripts(run_dir: Path) -> Transcripts:
    """Every conversation of the run in RUN_DIR ({} for a run that is not agentic)."""
    if not (run_dir / FILE_NAME).is_file():
        return {}
    store = RunStore(run_dir)
    try:
        steps = store.agent_steps()
    finally:
        store.close()
    found: Transcripts = {}
    for pid, sample, _, kind, body, seconds in steps:  # ordered by step
        found.setdefault((pid, sample), []).append(Step(kind, body, seconds))
    return found


def transcript_html(steps: list[Step], escape: Callable[[str], str], anchor: str = "") -> str:
    """The conversation as a collapsed <details> (the prompt is the attempt's, shown apart)."""
    tools = [s for s in steps if s.kind == "tool"]
    errors = sum(_is_error(_field(s.body, "result")) for s in tools)
    turns = sum(s.kind == "model" for s in steps)
    title = (
        f"Transcript: {turns} model turns, {len(tools)} tool calls, {errors} answered with an error"
    )
    parts = [_step(s, escape) for s in steps]
    ident = f' id="{anchor}"' if anchor else ""
    return (
        f'<details class="inner transcript"{ident}><summary>{escape(title)}</summary>'
        f"{''.join(parts)}</details>"
    )


def _step(step: Step, escape: Callable[[str], str]) -> str:
    body, seconds = step.body, f"{step.seconds:.2f} s"
    if step.kind == "model":
        tokens = f"{_field(body, 'completion_tokens')} completion tokens"
        content = _field(body, "content")
        shown = _pre(content, escape) if isinstance(content, str) and content.strip() else ""
        calls = _field(body, "tool_calls")
        requested = "".join(_requested(c, escape) for c in calls) if isinstance(calls, list) else ""
        return _turn("model", f"model · {seconds} · {tokens}", shown + requested, escape)
    if step.kind == "tool":
        result = _field(body, "result")
        name = f"tool {_text(_field(body, 'name'))} · {_text(_field(body, 'id'))} · {seconds}"
        css = "tool error" if _is_error(result) else "tool"
        arguments = _json_text(_field(body, "arguments"))
        shown = (
            f'<div class="label">arguments</div>{_pre(arguments, escape)}'
            f'<div class="label">result</div>{_pre(_pretty(result), escape)}'
        )
        return _turn(css, name, shown, escape)
    return _turn("error", step.kind, _pre(_pretty(body), escape), escape)


def _turn(css: str, head: str, shown: str, escape: Callable[[str], str]) -> str:
    return f'<div class="turn {css}"><div class="meta">{escape(head)}</div>{shown}</div>'


def _requested(call: Any, escape: Callable[[str], str]) -> str:
    function = _field(call, "function")
    name, arguments = _text(_field(function, "name")), _field(function, "arguments")
    head = f"calls {name} ({_text(_field(call, 'id'))})"
    return f'<div class="label">{escape(head)}</div>{_pre(_json_text(arguments), escape)}'


def _pre(text: str, escape: Callable[[str], str]) -> str:
    if len(text) > TEXT_LIMIT:
        more = len(text) - TEXT_LIMIT
        text = f"{text[:TEXT_LIMIT]}\n... ({more} more characters in agent-transcripts.jsonl)"
    return f"<pre>{escape(text)}</pre>"


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _text(value: Any, limit: int = 200) -> str:
    """A name or id the model chose, as a heading shows it (cut: it is not the content)."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result


def _json_text(arguments: Any) -> str:
    """A tool call's arguments (the model's JSON text) indented when they parse."""
    if not isinstance(arguments, str):
        return _pretty(arguments)
    try:
        return _pretty(json.loads(arguments))
    except (ValueError, RecursionError):
        return arguments


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "(a value that cannot be shown as JSON)"
