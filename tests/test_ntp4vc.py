"""An NTP4VC-shaped tree as published: `test_set.rocq.lst`, libraries as dune theories (one
reached through a symbolic link inside the tree), Rocq 9 spelling served by the
compatibility layer, library files compiled once per content into the build cache. Checked
in the host's real Coq; the tree is never written to."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.coq import CoqChecker, compat
from proofeval.provers.interface import CheckSettings, Job
from tests.coq_chains import CHAINS

pytestmark = pytest.mark.coq

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

# Rocq 9 spelling throughout; Base.v's Ztrunc needs Zfloor/Zceil, which Coq 8 lacks.
BASE = """From Stdlib Require Import ZArith Reals.
From Stdlib Require Import String.
Open Scope R_scope.
Definition Ztrunc (x : R) : Z := if Rle_dec 0 x then Zfloor x else Zceil x.
Definition double (n : nat) : nat := n + n.
"""
LIB = """From Stdlib Require Import Arith.
Require Import Why3.Base.
Lemma double_twice : forall n, double n = 2 * n.
Proof. intros n. unfold double. simpl. rewrite Nat.add_0_r. reflexivity. Qed.
"""
CASE = """From Stdlib Require Import Arith.
From Stdlib Require Import String.
Require Import Why3.Base.
Require Import sorting.Lib.Lib.

Theorem {name} : {statement}.
Proof.
Admitted.
"""
# Its statement spells what the compatibility layer rewrites; rewritten, it is false.
TRAP = 'String.length "From Stdlib Require Import list_relations."%string = 42'
C_CASE = """From Stdlib Require Import ZArith.
Require Import Why3.Base.

Theorem c_post : forall n : nat, double n = n + n.
Admitted.
"""


def write_tree(root: Path) -> Path:
    files = {
        "dune-workspace": "(lang dune 3.0)\n",
        "generation/rocq/dune-project": "(lang dune 3.19)\n(using coq 0.8)\n",
        "generation/rocq/Why3/dune": "(coq.theory\n (name Why3)\n (theories Stdlib stdpp))\n",
        "lib/Rocq4Why3/Why3/Base.v": BASE,
        "data/why3/pearl/sorting_vcg/rocq/dune": "(coq.theory (name sorting_vcg)\n"
        " (theories Why3 sorting.Lib))\n",
        "data/why3/pearl/sorting_vcg/rocq/sorting/Lib/dune": "(coq.theory (name sorting.Lib) "
        "(theories Why3)) ; a comment\n",
        "data/why3/pearl/sorting_vcg/rocq/sorting/Lib/Lib.v": LIB,
        "data/why3/pearl/sorting_vcg/rocq/sorting_twice.v": CASE.format(
            name="sorting_twice", statement="forall n, double n = 2 * n"
        ),
        "data/why3/pearl/sorting_vcg/rocq/sorting_trap.v": CASE.format(
            name="sorting_trap", statement=TRAP
        ),
        "data/why3/frama_c/demo/demo/demo_vcg/rocq/dune": "(coq.theory (name demo_vcg) "
        "(theories Why3))\n",
        "data/why3/frama_c/demo/demo/demo_vcg/rocq/c_post.v": C_CASE,
        "data/why3/pearl/unlisted_vcg/rocq/other.v": C_CASE,
        "test_set.rocq.lst": "data/why3/frama_c/demo/demo/demo_vcg/rocq/c_post.v\n"
        "data/why3/pearl/sorting_vcg/rocq/sorting_twice.v\n"
        "data/why3/pearl/sorting_vcg/rocq/sorting_trap.v\n",
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    os.symlink("../../../lib/Rocq4Why3/Why3/Base.v", root / "generation/rocq/Why3/Base.v")
    return root


def snapshot(root: Path) -> dict[str, float]:
    return {str(p): p.lstat().st_mtime for p in root.rglob("*")}


def check(
    problems: list[Problem], answers: dict[str, str], workers: int = 2, chain: str = ""
) -> tuple[dict[str, Outcome], list[str]]:
    got: dict[str, Outcome] = {}
    events: list[str] = []
    jobs = [Job(Attempt(p.id, 0, answers[p.id], answers[p.id]), p, 60.0) for p in problems]
    settings = CheckSettings(workers=workers)
    if chain:
        settings = dataclasses.replace(settings, coq_toolchain=chain)
    CoqChecker(settings, lambda a, o: got.__setitem__(a.problem_id, o), events.append).run(jobs)
    return got, events


TWICE = "data/why3/pearl/sorting_vcg/rocq/sorting_twice"
TRAP_ID = "data/why3/pearl/sorting_vcg/rocq/sorting_trap"
C_POST = "data/why3/frama_c/demo/demo/demo_vcg/rocq/c_post"


def test_the_tree_loads_as_published(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "ntp4vc")
    bench = load_benchmark(root)
    by_id = {p.id: p for p in bench.problems}
    assert list(by_id) == [C_POST, TWICE, TRAP_ID]  # the list's cases, in its order
    assert by_id[TWICE].category == "Pearls of Programming/sorting"
    assert by_id[C_POST].category == "Real C Verification/demo"
    assert by_id[TRAP_ID].statement == f"Theorem sorting_trap : {TRAP}."
    assert Path(by_id[TWICE].directory) == root / "data/why3/pearl/sorting_vcg/rocq"


@pytest.mark.parametrize("chain", CHAINS)
def test_cases_check_with_the_layer_and_the_tree_is_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chain: str
) -> None:
    monkeypatch.setenv("PROOFEVAL_COQ_CACHE", str(tmp_path / "cache"))
    root = write_tree(tmp_path / "ntp4vc")
    before = snapshot(root)
    bench = load_benchmark(root)
    answers = {
        TWICE: "Proof. exact double_twice. Qed.",
        C_POST: "Proof. intros n. reflexivity. Qed.",
        TRAP_ID: "Proof. reflexivity. Qed.",  # true only of the statement as written
    }
    got, events = check(bench.problems, answers, chain=chain)
    assert {pid: o.verdict for pid, o in got.items()} == dict.fromkeys(answers, Verdict.OK), got
    assert snapshot(root) == before
    said = "\n".join(events)
    for rule in ("From Stdlib -> From Coq", "Zfloor/Zceil defined"):
        assert rule in said
    # the tree's two case directories share one copy: Base.v is compiled once, not
    # compiled by one and fetched from the cache by the other
    assert re.search(r"library files: 2 compiled \([\d.]+ s\), 0 from the cache", said)

    # a second run: every library file from the cache, none compiled
    got, events = check(load_benchmark(root).problems, answers, chain=chain)
    assert all(o.verdict is Verdict.OK for o in got.values())
    assert "library files: 0 compiled (0.0 s), 2 from the cache" in "\n".join(events)


def test_a_changed_library_compiles_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROOFEVAL_COQ_CACHE", str(tmp_path / "cache"))
    root = write_tree(tmp_path / "ntp4vc")
    problems = [p for p in load_benchmark(root).problems if p.id == TWICE]
    answer = {TWICE: "Proof. exact double_twice. Qed."}
    check(problems, answer)
    lib = root / "data/why3/pearl/sorting_vcg/rocq/sorting/Lib/Lib.v"
    lib.write_text(LIB + "Definition extra := 1.\n")
    _got, events = check(problems, answer)
    said = "\n".join(events)
    assert re.search(r"library files: 1 compiled \([\d.]+ s\), 1 from the cache", said)


def test_a_link_out_of_the_tree_is_an_error_naming_it(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "ntp4vc")
    outside = tmp_path / "secret.v"
    outside.write_text(BASE)
    link = root / "generation/rocq/Why3/Base.v"
    link.unlink()
    os.symlink(outside, link)
    problems = [p for p in load_benchmark(root).problems if p.id == C_POST]
    got, _events = check(problems, {C_POST: "Proof. intros n. reflexivity. Qed."})
    assert got[C_POST].verdict is Verdict.ERROR
    assert "outside the tree" in got[C_POST].message


def test_an_unservable_library_is_an_error_whose_reason_comes_first(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "ntp4vc")
    base = root / "lib/Rocq4Why3/Why3/Base.v"
    base.write_text("From Stdlib Require Import NoSuchRocq9Module.\n" + BASE)
    problems = [p for p in load_benchmark(root).problems if p.id == C_POST]
    got, _events = check(problems, {C_POST: "Proof. intros n. reflexivity. Qed."})
    message = got[C_POST].message
    assert got[C_POST].verdict is Verdict.ERROR
    assert message.startswith("the header's libraries: the library file generation/rocq/Why3")
    assert "NoSuchRocq9Module" in message
    assert "project_" not in message  # paths as the tree's, not the scratch copy's


def test_the_layer_rewrites_only_for_coq_8() -> None:
    text = "From Stdlib Require Import ZArith.\nFrom stdpp Require Import list_relations.\n"
    assert compat.apply(text, "9.0.0") == (text, [])
    rewritten, applied = compat.apply(text, "8.20.1")
    assert rewritten == "From Coq Require Import ZArith.\nFrom stdpp Require Import list.\n"
    assert applied == ["From Stdlib -> From Coq", "stdpp list_relations -> stdpp list"]
    own = "Definition Zfloor (x : R) : Z := 0.\nDefinition Ztrunc (x : R) : Z := Zfloor x.\n"
    assert compat.apply(own, "8.20.1") == (own, [])  # a file defining its own is left alone


def test_prompts_read_the_tree_with_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_tree(tmp_path / "ntp4vc")
    assert main(["prompts", str(root), "--only", "data/why3/pearl/*"]) == 0
    printed = capsys.readouterr().out
    assert f"===== {TWICE} =====" in printed and f"===== {TRAP_ID} =====" in printed
    assert C_POST not in printed
    assert "From Stdlib Require Import String." in printed  # the model sees it as published


def test_check_on_the_tree_records_the_layer_in_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROOFEVAL_COQ_CACHE", str(tmp_path / "cache"))
    root = write_tree(tmp_path / "ntp4vc")
    answers = tmp_path / "answers.csv"
    answers.write_text(f'problem_id,answer\n{TWICE},"Proof. exact double_twice. Qed."\n')
    out = tmp_path / "run"
    command = ["check", str(root), "--only", TWICE, "--answers", str(answers), "--out", str(out)]
    assert main(command) == 0
    table = capsys.readouterr().out
    assert "Pearls of Programming/sorting" in table
    events = (out / "events.txt").read_text()
    assert "compatibility with Coq" in events and "From Stdlib -> From Coq" in events
    assert "library files: 2 compiled" in events
    assert "OK" in (out / "results.csv").read_text()
