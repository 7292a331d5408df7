"""--complicate: the asserts, lemma declarations and lemma functions (with their
applications) go, and nothing else; Why3 reads the result, and the build records per
problem what was erased."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proofeval.builders import why3_tool, why3_vcs
from proofeval.builders.complicate import complicate, tokens
from proofeval.loaders import why3_vcs as vc_benchmark
from tests.conftest import skip_without_why3_coq_library

pytestmark = pytest.mark.why3

GALLERY = Path("/usr/share/doc/why3-examples/examples")

SOURCE = """module M
  use int.Int

  (* assert { a comment stays } *)
  lemma easy: forall x: int. x + 0 = x

  axiom kept: forall x: int. x * 1 = x

  let lemma helper (x: int)
    requires { x >= 0 }
    ensures { x * x >= 0 }
  = ()

  let f (x: int) : int
    requires { x >= 0 }
    ensures { result >= x }
  = assert { x + 0 = x };
    check { x >= 0 };
    helper x;
    assume { if x = 0 then true else x = x };
    let y = x in
    y + 1

  let g (y: int) : int ensures { result = y } = assert { y = y }; y
end
"""
EXPECTED = """module M
  use int.Int

  (* assert { a comment stays } *)
  axiom kept: forall x: int. x * 1 = x

  let f (x: int) : int
    requires { x >= 0 }
    ensures { result >= x }
  = ();
    check { x >= 0 };
    ();
    assume { if x = 0 then true else x = x };
    let y = x in
    y + 1

  let g (y: int) : int ensures { result = y } = (); y
end
"""


def test_complicate_erases_what_it_should_and_nothing_else() -> None:
    text, erased = complicate(Path("m.mlw"), SOURCE)
    assert text == EXPECTED
    assert erased == {
        "M.": ["lemma easy", "lemma function helper"],
        "M.f": ["assert at line 17", "application of helper at line 19"],
        "M.g": ["assert at line 24"],
    }


def test_comments_and_strings_are_not_code() -> None:
    source = 'let s = "assert { no }" (* assert { (* nested *) no } *) let lemma x = ()'
    assert [t.text for t in tokens(source)] == ["let", "s", "=", '"assert { no }"', "let",
                                                 "lemma", "x", "=", "(", ")"]  # fmt: skip
    text, erased = complicate(Path("s.mlw"), "let f () = assert { (*) = (*) }; ()\n")
    assert text == "let f () = (); ()\n" and list(erased) == [".f"]


@pytest.mark.skipif(shutil.which("why3") is None, reason="Why3 is not installed")
def test_the_build_records_what_each_problem_lost(tmp_path: Path) -> None:
    skip_without_why3_coq_library()
    source = tmp_path / "m.mlw"
    source.write_text(SOURCE)
    plain = why3_vcs.build([source], tmp_path / "plain", {})
    hard = why3_vcs.build([source], tmp_path / "hard", {}, complicated=True)
    assert [p["id"] for p in plain.problems] == [
        "m.M.easy",
        "m.M.helper'vc",
        "m.M.f'vc",
        "m.M.g'vc",
    ]
    assert [p["id"] for p in hard.problems] == ["m.M.f'vc", "m.M.g'vc"]
    erased = {p["id"]: p["erased"] for p in hard.problems}
    assert erased["m.M.f'vc"] == [
        "assert at line 17", "application of helper at line 19", "lemma easy",
        "lemma function helper",
    ]  # fmt: skip
    assert erased["m.M.g'vc"] == ["assert at line 24", "lemma easy", "lemma function helper"]
    manifest = json.loads((tmp_path / "hard" / vc_benchmark.MANIFEST).read_text())
    assert manifest["complicated"] is True
    assert all("x + 0 = x" not in p.statement for p in vc_benchmark.load(tmp_path / "hard", "hard"))


@pytest.mark.skipif(not (GALLERY / "gcd.mlw").is_file(), reason="why3-examples not installed")
@pytest.mark.parametrize("program", ["gcd.mlw", "binary_search.mlw", "isqrt.mlw"])
def test_gallery_programs_lose_only_their_asserts_and_lemmas(program: str, tmp_path: Path) -> None:
    """Every assert goes; of the goals, exactly the erased lemmas' and lemma functions'."""
    original = (GALLERY / program).read_text()
    text, erased = complicate(GALLERY / program, original)
    before = [t.text for t in tokens(original)]
    after = [t.text for t in tokens(text)]
    assert "assert" not in after and "lemma" not in after
    for word in ("check", "assume", "invariant", "axiom", "module", "end"):
        assert before.count(word) == after.count(word), word
    items = [what for whats in erased.values() for what in whats]
    lost = {
        w.removeprefix("lemma function ").removeprefix("lemma ")
        for w in items
        if w.startswith("lemma")
    }
    complicated = tmp_path / program
    complicated.write_text(text)
    goals = {(g.module, g.goal) for g in why3_tool.print_coq(GALLERY / program, tmp_path, False)}
    left = {(g.module, g.goal) for g in why3_tool.print_coq(complicated, tmp_path, False)}
    assert left <= goals
    assert {goal.removesuffix("'vc") for _, goal in goals - left} == lost
