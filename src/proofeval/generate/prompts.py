"""Render a problem's prompt from a template: a built-in one, or a user's file.

A template is Jinja2 and sees the problem's id, statement, header, category, prover and
benchmark, plus prover_name ("HOL Light", "Lean 4", ...) and language (the code fence tag:
"ocaml", "lean4", "coq", "isabelle"). Never the reference proof. A user's file with the
s2n-bignum-bench placeholder `{query.txt}` is that benchmark's plain format instead:
`{query.txt}` becomes the statement and `{setup.ml}` the header.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from proofeval.errors import InputError, read_text
from proofeval.model import Problem
from proofeval.provers import registry

TEMPLATES = Path(__file__).parent / "templates"
BUILTIN = ("hol_light_tactic", "formal_proof", "plan_then_proof", "verification_condition")
PLACEHOLDERS = ("{query.txt}", "{setup.ml}")

Renderer = Callable[[Problem], str]


def default_template(prover: str) -> str:
    """The built-in template for a prover (its backend's: tactics for HOL Light, whole
    proofs otherwise)."""
    known = registry.find(prover)
    return "formal_proof" if known is None else known.template


def render(template: str | Path | None, problem: Problem) -> str:
    """The prompt for `problem`: `template` is a built-in name, a file, or None (the
    prover's default)."""
    spec = default_template(problem.prover) if template is None else str(template)
    return renderer(spec)(problem)


def variables(problem: Problem) -> dict[str, str]:
    """What a template may use: everything about the problem except its reference proof."""
    known = registry.find(problem.prover)
    return {
        "id": problem.id,
        "statement": problem.statement,
        "header": problem.header,
        "category": problem.category,
        "prover": problem.prover,
        "benchmark": problem.benchmark,
        "prover_name": known.title if known else problem.prover,
        "language": known.fence if known else problem.prover,
    }


def template_text(spec: str) -> tuple[Path, str]:
    """The file and text of a built-in template's name or a template file."""
    if spec in BUILTIN:
        return TEMPLATES / f"{spec}.j2", read_text(TEMPLATES / f"{spec}.j2")
    path = Path(spec)
    if not path.exists():
        raise InputError(f"no such template: {spec} (built-in templates: {', '.join(BUILTIN)})")
    return path, read_text(path)


@lru_cache(maxsize=32)
def renderer(spec: str) -> Renderer:
    """A function from problem to prompt for a built-in name or a template file (cached)."""
    path, text = template_text(spec)
    if spec in BUILTIN:
        return _jinja(path, text)
    if PLACEHOLDERS[0] in text:
        return lambda problem: _placeholders(text, problem)
    return _jinja(path, text)


_PLACEHOLDER = re.compile(r"\{(query\.txt|setup\.ml)\}")


def _placeholders(text: str, problem: Problem) -> str:
    # One pass: a statement that contains "{setup.ml}" is not filled in a second time.
    values = {"query.txt": problem.statement, "setup.ml": problem.header}
    return _PLACEHOLDER.sub(lambda m: values[m[1]], text)


def environment(*directories: Path) -> SandboxedEnvironment:
    """How every prompt template is rendered: sandboxed, strict about undefined variables,
    loading included files from `directories`."""
    return SandboxedEnvironment(
        loader=jinja2.FileSystemLoader([str(d) for d in directories]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _jinja(path: Path, text: str) -> Renderer:
    # Sandboxed: no attribute path from a template reaches Python objects that hold the
    # problem's reference proof.
    env = environment(path.parent, TEMPLATES)
    try:
        template = env.from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message}") from None

    def render_one(problem: Problem) -> str:
        try:
            return template.render(variables(problem))
        except jinja2.TemplateSyntaxError as exc:  # in a file it includes
            where = exc.filename or path
            raise InputError(
                f"{where}:{exc.lineno}: template syntax error: {exc.message}"
            ) from None
        except jinja2.UndefinedError as exc:
            known = ", ".join(variables(problem))
            raise InputError(f"{path}: {exc.message} (variables: {known})") from None
        except jinja2.TemplateError as exc:
            raise InputError(f"{path}: template error: {exc}") from None

    return render_one
