"""The prompt of a repair round: the problem's first prompt, the previous answer, and the
checker's verdict and structured feedback, through a Jinja2 template (the built-in
`repair`, or a user's file, rendered in the same sandbox as every prompt template).

Besides a problem's variables (prompts.variables) a repair template sees: original_prompt,
round (the round being asked for, from 1), previous_output, previous_proof, verdict,
message, and the feedback's goals (a list), more_goals, failed_step (None: every step
ran) and failed_tactic.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from proofeval.errors import InputError, read_text
from proofeval.generate.prompts import TEMPLATES, environment, variables
from proofeval.model import Outcome, Problem

BUILTIN_REPAIR = "repair"


@dataclass(frozen=True)
class Previous:
    """What the model is shown of the round before."""

    original_prompt: str
    output: str
    proof: str
    outcome: Outcome
    feedback: dict | None = None


def repair_variables(problem: Problem, previous: Previous, round_number: int) -> dict:
    fb = previous.feedback or {}
    return variables(problem) | {
        "original_prompt": previous.original_prompt.rstrip("\n"),
        "round": round_number,
        "previous_output": previous.output,
        "previous_proof": previous.proof,
        "verdict": previous.outcome.verdict.value,
        "message": previous.outcome.message,
        "goals": list(fb.get("goals") or []),
        "more_goals": int(fb.get("more_goals") or 0),
        "failed_step": fb.get("failed_step"),
        "failed_tactic": str(fb.get("failed_tactic") or ""),
    }


def render_repair(
    template: str | Path | None, problem: Problem, previous: Previous, round_number: int
) -> str:
    """The prompt of round `round_number` (>= 1): `template` is a file, or None for the
    built-in one."""
    path, compiled = _compiled(str(template) if template is not None else BUILTIN_REPAIR)
    values = repair_variables(problem, previous, round_number)
    try:
        return compiled.render(values)
    except jinja2.UndefinedError as exc:
        raise InputError(f"{path}: {exc.message} (variables: {', '.join(values)})") from None
    except jinja2.TemplateError as exc:
        raise InputError(f"{path}: template error: {exc}") from None


@lru_cache(maxsize=8)
def _compiled(spec: str) -> tuple[Path, jinja2.Template]:
    path = TEMPLATES / f"{spec}.j2" if spec == BUILTIN_REPAIR else Path(spec)
    if not path.is_file():
        raise InputError(f"no such repair template: {spec}")
    try:
        return path, environment(path.parent, TEMPLATES).from_string(read_text(path))
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message}") from None
