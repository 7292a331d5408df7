"""PutnamBench / NTP4VC-shaped Rocq trees: a manifest of one-theorem `.v` cases and a
shared library declared in `_CoqProject`, read by load_benchmark and checked in real Coq
(the library compiled once into a scratch copy, the tree itself left read-only)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from proofeval.errors import InputError
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.interface import CheckSettings, Job
from tests.coq_chains import CHAINS

pytestmark = pytest.mark.coq

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

DEFS = """Definition double (n : nat) : nat := n + n.

Lemma double_add : forall n : nat, double n = n + n.
Proof. reflexivity. Qed.
"""
CASE_A = """From MyLib Require Import Defs.
Require Import Arith.

Theorem double_two : double 2 = 4.
Proof.
Admitted.
"""
CASE_B = """(* a helper proved in the case file stays in the header *)
From MyLib Require Import Defs.

Lemma helper : forall n : nat, n = n.
Proof. reflexivity. Qed.

Theorem double_comm : forall n m : nat, double (n + m) = double m + double n.
Admitted.
"""
MISSING = """From MyLib Require Import Nowhere.

Theorem lost : True.
Admitted.
"""


def write_tree(root: Path, manifest: str = "cases.txt") -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "Defs.v").write_text(DEFS)
    (root / "_CoqProject").write_text("-Q lib MyLib\n")
    for rel, text in [
        ("arith/double_two.v", CASE_A),
        ("algebra/sub/double_comm.v", CASE_B),
        ("broken/lost.v", MISSING),
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cases = ["arith/double_two.v", "algebra/sub/double_comm.v", "broken/lost.v"]
    if manifest == "cases.json":
        (root / manifest).write_text(json.dumps(cases))
    else:
        (root / manifest).write_text("# the cases\n" + "\n".join(cases) + "\n\n")
    return root


def read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.mark.parametrize("manifest", ["cases.txt", "cases.json"])
def test_load_benchmark_reads_the_cases(tmp_path: Path, manifest: str) -> None:
    root = write_tree(tmp_path / "tree", manifest)
    for given in (root, root / manifest):
        bench = load_benchmark(given)
        assert bench.name == "tree"
        problems = {p.id: p for p in bench.problems}
        assert list(problems) == ["arith/double_two", "algebra/sub/double_comm", "broken/lost"]
        assert [p.category for p in bench.problems] == ["arith", "algebra", "broken"]
        assert all(p.prover == "coq" and p.directory == str(root.resolve()) for p in bench.problems)
        a, b = problems["arith/double_two"], problems["algebra/sub/double_comm"]
        assert a.statement == "Theorem double_two : double 2 = 4."
        assert a.header == "From MyLib Require Import Defs.\nRequire Import Arith.\n"
        assert b.statement.startswith("Theorem double_comm : forall n m : nat,")
        assert "Lemma helper" in b.header and "double_comm" not in b.header
        assert all("Admitted" not in p.header + p.statement for p in bench.problems)


def test_a_missing_manifest_entry_is_one_input_error_naming_its_line(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "tree")
    (root / "cases.txt").write_text("arith/double_two.v\n\narith/nope.v\n")
    with pytest.raises(InputError, match=r"cases\.txt:3: no such case file: arith/nope\.v"):
        load_benchmark(root)
    (root / "cases.txt").unlink()
    (root / "cases.json").write_text('["arith/double_two.v", "gone.v"]')
    with pytest.raises(InputError, match=r"cases\.json: entry 2: no such case file: gone\.v"):
        load_benchmark(root)
    (root / "cases.json").write_text('["../outside.v"]')
    with pytest.raises(InputError, match="entry 1: '../outside.v' is not inside the tree"):
        load_benchmark(root)


def check(
    jobs: list[tuple[Problem, str]], workers: int = 1, coqchk: bool = False, chain: str = ""
) -> list[Outcome]:
    got: dict[int, Outcome] = {}
    batch = [Job(Attempt(p.id, i, a, a), p, 60) for i, (p, a) in enumerate(jobs)]
    settings = CheckSettings(workers=workers, coqchk=coqchk, coq_toolchain=chain)
    CoqChecker(settings, lambda a, o: got.__setitem__(a.index, o)).run(batch)
    return [got[i] for i in range(len(jobs))]


@pytest.mark.parametrize("chain", CHAINS)
def test_cases_check_against_the_compiled_library(tmp_path: Path, chain: str) -> None:
    root = write_tree(tmp_path / "tree")
    problems = {p.id: p for p in load_benchmark(root).problems}
    a, b = problems["arith/double_two"], problems["algebra/sub/double_comm"]
    lost = problems["broken/lost"]
    read_only(root)  # the user's tree may be read-only: the library compiles in a copy
    try:
        outcomes = check(
            [
                (a, "rewrite double_add. reflexivity."),
                (b, "intros n m. rewrite !double_add. lia."),
                (b, "Proof. intros n m. rewrite !double_add. Require Lia. Admitted."),
                (b, "intros n m. rewrite !double_add. Require Import Lia. lia."),
                (b, "Admitted."),
                (a, "reflexivity. Qed."),
                (b, "intros n m. reflexivity."),
                (lost, "exact I."),
                (lost, "trivial."),
            ],
            workers=2,
            chain=chain,
        )
    finally:
        writable(root)
    verdicts = [o.verdict for o in outcomes]
    assert verdicts[0] is Verdict.OK, outcomes[0]
    assert verdicts[1] is Verdict.FAIL  # lia is not loaded by this header
    assert verdicts[2:5] == [Verdict.CHEATING] * 3
    assert verdicts[5] is Verdict.OK  # double 2 computes to 4
    assert verdicts[6] is Verdict.FAIL
    assert not list(root.rglob("*.vo")), "the user's tree was written to"
    for missing in outcomes[7:]:
        assert (missing.verdict, missing.stage) == (Verdict.ERROR, Stage.PRECHECK)
        assert "Nowhere" in missing.message and "MyLib" in missing.message
    assert outcomes[7].message == outcomes[8].message


@pytest.mark.parametrize("chain", CHAINS)
def test_second_line_rechecks_a_proof_that_uses_the_library(tmp_path: Path, chain: str) -> None:
    """The second line (with coqchk) compiles the attempt with the session's load paths,
    in the same sandbox."""
    root = write_tree(tmp_path / "tree")
    a = {p.id: p for p in load_benchmark(root).problems}["arith/double_two"]
    answer = "rewrite double_add. reflexivity."
    outcomes = check([(a, answer)], workers=1, coqchk=True, chain=chain)
    assert outcomes[0].verdict is Verdict.OK, outcomes[0]


@pytest.mark.parametrize("chain", CHAINS)
def test_a_library_that_does_not_compile_is_one_precheck_error(tmp_path: Path, chain: str) -> None:
    root = write_tree(tmp_path / "tree")
    (root / "lib" / "Defs.v").write_text(DEFS + "Lemma broken : 1 = 2. Proof. reflexivity. Qed.\n")
    a = next(p for p in load_benchmark(root).problems if p.id == "arith/double_two")
    outcome = check([(a, "reflexivity.")], chain=chain)[0]
    assert (outcome.verdict, outcome.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "the library file lib/Defs.v does not compile" in outcome.message


def test_a_load_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "tree")
    (root / "_CoqProject").write_text("-Q lib MyLib\n-R vendor Vendor\n")
    a = next(p for p in load_benchmark(root).problems if p.id == "arith/double_two")
    outcome = check([(a, "reflexivity.")])[0]
    assert (outcome.verdict, outcome.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "_CoqProject: -R vendor Vendor: no directory" in outcome.message
