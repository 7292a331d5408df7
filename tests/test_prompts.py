"""Prompt templates: built-in, user Jinja2 files and the s2n-bignum-bench `{query.txt}` file.

The integrity rule under attack: no template, built-in or a user's, can put a problem's
reference proof into a prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.generate.prompts import BUILTIN, render
from proofeval.model import Problem
from tests.conftest import shared_data

SECRET = "REFERENCE_ONLY_TAC"
ROOT = Path(__file__).resolve().parents[1]

HOL = Problem(
    "common.misc.ADD_0",
    "`!n. n + 0 = n`",
    category="generic",
    header="let LEMMA = prove(`T`, CHEAT_TAC);;",
    reference=SECRET,
)
COQ = Problem(
    "vc.add_0",
    "Theorem add_0 : forall n, n + 0 = n.",
    prover="coq",
    header="Require Import Lia.",
    reference=SECRET,
)
LEAN = Problem("lean.t", "theorem t : 1 = 1 := by", prover="lean4", reference=SECRET)


@pytest.mark.parametrize("template", BUILTIN)
@pytest.mark.parametrize("problem", [HOL, COQ, LEAN], ids=lambda p: p.prover)
def test_builtin_templates_show_the_statement_and_never_the_reference(
    template: str, problem: Problem
):
    prompt = render(template, problem)
    assert problem.statement in prompt
    assert SECRET not in prompt
    assert "{{" not in prompt and "{%" not in prompt


def test_the_default_follows_the_prover():
    assert render(None, HOL) == render("hol_light_tactic", HOL)
    assert render(None, COQ) == render("formal_proof", COQ)


def test_the_whole_proof_prompt_gives_the_context_in_the_provers_language():
    prompt = render("formal_proof", COQ)
    assert "in Coq" in prompt and "```coq\nRequire Import Lia.\n```" in prompt


def test_the_hol_light_prompt_has_worked_examples():
    prompt = render("hol_light_tactic", HOL)
    assert prompt.count("```") >= 6  # examples' goals and tactics, then the query


# --- a user's Jinja2 file -----------------------------------------------------------------


def template(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.j2"
    path.write_text(text)
    return path


def error(spec: str | Path, problem: Problem = HOL) -> str:
    with pytest.raises(InputError) as caught:
        render(spec, problem)
    return str(caught.value)


def test_a_user_template_sees_the_problem(tmp_path: Path):
    path = template(tmp_path, "{{ prover_name }} {{ category }} {{ id }}: {{ statement }}")
    assert render(path, HOL) == "HOL Light generic common.misc.ADD_0: `!n. n + 0 = n`"


@pytest.mark.parametrize(
    "text",
    [
        "{{ reference }}",
        "{{ problem.reference }}",
        "{{ self._TemplateReference__context.reference }}",
        "{% for k, v in self._TemplateReference__context.items() %}{{ v }}{% endfor %}",
        # Walks from a Jinja global to every live Python object, the problem among them.
        "{% for o in cycler.__init__.__globals__.__builtins__.__import__('gc').get_objects()"
        " %}{{ o.reference if o.__class__.__name__ == 'Problem' }}{% endfor %}",
    ],
)
def test_a_template_cannot_reach_the_reference(tmp_path: Path, text: str):
    try:
        prompt = render(template(tmp_path, text), HOL)
    except InputError as exc:
        assert SECRET not in str(exc) and "reference" not in str(exc).split("variables:")[-1]
    else:
        assert SECRET not in prompt


def test_an_unknown_variable_names_the_known_ones(tmp_path: Path):
    message = error(template(tmp_path, "{{ goal }}"))
    assert "'goal' is undefined" in message and "statement" in message


def test_a_syntax_error_names_file_and_line(tmp_path: Path):
    path = template(tmp_path, "line one\n{% if statement %}\nno endif\n")
    message = error(path)
    assert message.startswith(f"{path}:") and "syntax error" in message


def test_a_missing_template_lists_the_builtins(tmp_path: Path):
    message = error(tmp_path / "nope.j2")
    assert "no such template" in message and all(name in message for name in BUILTIN)


def test_a_statement_is_text_not_template_code(tmp_path: Path):
    tricky = Problem("p", "`{{ 7 * 7 }} {% raw %}`", reference=SECRET)
    assert render(template(tmp_path, "{{ statement }}"), tricky) == tricky.statement


# --- the s2n-bignum-bench format ----------------------------------------------------------


def test_the_official_template_gets_the_query():
    official = shared_data("s2n-bignum-bench", "prompt-basic.txt")
    prompt = render(official, HOL)
    assert "```\n`!n. n + 0 = n`\n```" in prompt
    assert "{query.txt}" not in prompt and SECRET not in prompt
    # Everything but the placeholder is the file's own text.
    assert prompt == official.read_text().replace("{query.txt}", HOL.statement)


def test_placeholders_are_filled_once(tmp_path: Path):
    """A statement holding `{setup.ml}` is not filled again with the context."""
    path = template(tmp_path, "{setup.ml}\n---\n{query.txt}")
    tricky = Problem("p", "`x = {setup.ml}`", header="CONTEXT")
    assert render(path, tricky) == "CONTEXT\n---\n`x = {setup.ml}`"


def test_the_project_ships_none_of_the_official_prompt():
    official = shared_data("s2n-bignum-bench", "prompt-basic.txt").read_text()
    lines = {line.strip() for line in official.splitlines() if len(line.strip()) > 30}
    for path in (ROOT / "src").rglob("*"):
        if path.is_file() and path.suffix in {".py", ".j2", ".ml", ".txt", ".md"}:
            text = path.read_text(errors="replace")
            assert not [line for line in lines if line in text], path


# --- proofeval prompts --------------------------------------------------------------------


def test_prompts_out_keeps_every_file_inside_the_directory(tmp_path: Path, capsys):
    ids = ["../escape", "/abs/path", ".hidden", "a\\b", "plain"]
    bench = tmp_path / "bench.jsonl"
    rows = [{"id": i, "statement": f"`T{n}`", "reference": SECRET} for n, i in enumerate(ids)]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "sub" / "prompts"
    assert main(["prompts", str(bench), "--out", str(out)]) == 0
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.txt"))
    assert len(written) == len(ids) and all(p.parent == Path("sub/prompts") for p in written)
    assert not any(SECRET in p.read_text() for p in out.iterdir())
    assert "wrote 5 prompts" in capsys.readouterr().err


def test_prompts_prints_each_problem_under_its_id(tmp_path: Path, capsys):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "one", "statement": "`T`"}) + "\n")
    path = template(tmp_path, "prove {{ statement }}")
    assert main(["prompts", str(bench), "--template", str(path)]) == 0
    assert capsys.readouterr().out == "===== one =====\nprove `T`\n"


def test_prompts_with_an_unknown_problem_is_one_line(tmp_path: Path, capsys):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "one", "statement": "`T`"}) + "\n")
    assert main(["prompts", str(bench), "--problem", "two"]) == 2
    err = capsys.readouterr().err
    assert "no such problem" in err and "Traceback" not in err and err.count("\n") == 1
