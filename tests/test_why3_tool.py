"""why3_tool.ml on the host's Why3 (1.5 on Debian 12, 1.8 on Debian 13), without Why3's Coq
library: the variant of why3_compat.ml it is built with, the order of its goals, where it
says a source is wrong, and its provers' answers against `why3 prove` on the same goals."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from proofeval.builders import why3_tool
from proofeval.errors import InputError
from tests.why3_gallery import GALLERY, PROGRAMS, why3_prove_z3

pytestmark = pytest.mark.why3

needs_why3 = pytest.mark.skipif(
    shutil.which("why3") is None or not (GALLERY / "fact.mlw").is_file(),
    reason="Why3 and its gallery are not installed (make install)",
)


@pytest.mark.parametrize(
    ("version", "variant"),
    [("1.5.1", "why3_compat_1_5.ml"), ("1.4.0", "why3_compat_1_5.ml"),
     ("1.8.0", "why3_compat_1_8.ml"), ("1.8.2+git", "why3_compat_1_8.ml")],
)  # fmt: skip
def test_the_compat_variant_follows_the_version(
    version: str, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(why3_tool, "why3_version", lambda: version)
    assert why3_tool.compat_variant() == variant


@pytest.mark.parametrize("version", ["1.6.0", "1.7.2", "unknown"])
def test_a_version_between_or_unreadable_is_refused_by_name(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(why3_tool, "why3_version", lambda: version)
    with pytest.raises(InputError, match=re.escape(version)):
        why3_tool.compat_variant()


@needs_why3
def test_goals_follow_the_modules_source_order(tmp_path: Path) -> None:
    """Why3 keeps a file's modules in a map by name; the tool orders them by where they
    start (a location, read through why3_compat)."""
    source = tmp_path / "order.mlw"
    source.write_text(
        "module Zeta\n  use int.Int\n  goal z: 1 + 1 = 2\nend\n"
        "module Alpha\n  use int.Int\n  goal a: 2 + 2 = 4\n  goal b: 0 <= 1\nend\n"
    )
    goals = why3_tool.print_coq(source, tmp_path, split=False)
    assert [(g.number, g.module, g.goal) for g in goals] == [
        (1, "Zeta", "z"),
        (2, "Alpha", "a"),
        (3, "Alpha", "b"),
    ]
    assert sorted(p.name for p in tmp_path.glob("*.v")) == ["1.v", "2.v", "3.v"]
    assert "Theorem a" in (tmp_path / "2.v").read_text()


@needs_why3
def test_a_rejected_source_is_named_at_its_line_and_column(tmp_path: Path) -> None:
    source = tmp_path / "bad.mlw"
    source.write_text(
        "module M\n  use int.Int\n  let f (x: int) : int\n    ensures { result = y } = x\nend\n"
    )
    with pytest.raises(InputError) as caught:
        why3_tool.print_coq(source, tmp_path, split=False)
    # `y` is on line 4 at column 23; Why3 1.8's location also has an end, not shown.
    assert f"{source}:4:23: " in str(caught.value)
    assert "unbound" in str(caught.value).lower()


@needs_why3
def test_the_tools_prover_calls_agree_with_why3_prove() -> None:
    """Each goal, Z3 for 2 s through the tool's calls (limits, drivers, interruption: the
    API that changed from Why3 1.5 to 1.8) and through `why3 prove`: the same answers."""
    ours = [
        (r.goal.goal, r.valid)
        for program in PROGRAMS
        for r in why3_tool.prove(GALLERY / program, False, 2, "flat", ["Z3"])
    ]
    direct = why3_prove_z3(2)
    assert ours == direct
    assert 0 < sum(valid for _, valid in direct) < len(direct)  # both answers occur


DETECTED = """[main]
magic = 14

[partial_prover]
name = "CVC5"
path = "/usr/bin/cvc5"
version = "1.1.2"

[partial_prover]
name = "Eprover"
path = "/usr/bin/eprover"
version = "{e}"
"""


def test_e_3_is_declared_with_auto_in_place_of_the_detected_one() -> None:
    text = why3_tool._declared(DETECTED.format(e="3.2.5"), "1.1.2", "3.2.5")
    assert text.count('name = "Eprover"') == 1 and "/usr/bin/eprover" not in text
    assert "eprover -s -R --auto --cpu-limit=%t --tstp-in %f" in text
    assert text.count('name = "CVC5"') == 1  # detected: not declared again
    assert text.startswith("[main]\nmagic = 14\n\n") and "\n\n\n" not in text


def test_an_e_why3_knows_and_a_missing_cvc5_are_left_to_why3_and_declared() -> None:
    detected = DETECTED.format(e="2.6").replace('name = "CVC5"', 'name = "Other"')
    text = why3_tool._declared(detected, "1.0.3", "2.6")
    assert text.startswith(detected.rstrip("\n") + '\n\n[prover]\nname = "CVC5"')
    assert "--auto" not in text
    assert why3_tool._declared(detected, "", "") == detected


@needs_why3
def test_every_installed_prover_closes_a_trivial_goal(tmp_path: Path) -> None:
    """On Debian 13, Why3 1.8 ran E 3 with an option E 3 refuses: every call failed."""
    source = tmp_path / "trivial.mlw"
    source.write_text(
        "module M\n  type t\n  predicate p t\n  predicate q t\n"
        "  goal g: forall x: t. p x -> (q x \\/ p x)\nend\n"
    )
    provers = why3_tool.installed_provers()
    assert {"CVC4", "Z3", "Eprover"} <= set(provers)  # make install's
    for prover in provers:
        [result] = why3_tool.prove(source, False, 10, "flat", [prover])
        assert (result.valid, result.provers) == (True, prover)


@needs_why3
def test_cvc5_is_configured_once() -> None:
    """Why3 1.5 does not detect cvc5 (proofeval declares it); 1.8 does (declared once)."""
    if shutil.which("cvc5") is None:
        pytest.skip("cvc5 is not installed")
    text = why3_tool.config().read_text()
    assert len(re.findall(r'^name = "CVC5"$', text, re.MULTILINE)) == 1
    assert "CVC5" in why3_tool.installed_provers()
