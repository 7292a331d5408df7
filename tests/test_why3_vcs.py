"""`proofeval build why3` on programs of the installed Why3 gallery (why3-examples; read in
place, nothing of it is copied into the repository), checked in real Coq with Why3's Coq
library as `make install` builds it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from proofeval.builders import why3_tool, why3_vcs
from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark
from proofeval.loaders import why3_vcs as vc_benchmark
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.interface import CheckSettings, Job
from tests.conftest import skip_without_why3_coq_library

pytestmark = [pytest.mark.why3, pytest.mark.coq]

GALLERY = Path("/usr/share/doc/why3-examples/examples")
PROGRAMS = ("gcd.mlw", "fact.mlw", "isqrt.mlw")
if shutil.which("why3") is None or not (GALLERY / "gcd.mlw").is_file():
    pytest.skip("Why3 and its gallery are not installed (make install)", allow_module_level=True)
skip_without_why3_coq_library(module=True)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("why3") / "bench"
    argv = ["build", "why3", *(str(GALLERY / p) for p in PROGRAMS), "--out", str(out)]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def problems(bench: Path) -> dict[str, Problem]:
    return {p.id: p for p in load_benchmark(bench).problems}


def test_every_goal_of_the_programs_is_a_problem_with_a_stable_id(
    problems: dict[str, Problem], bench: Path
) -> None:
    assert len(problems) == 29
    assert "gcd.EuclideanAlgorithm.euclid'vc" in problems
    assert "gcd.BinaryGcd.even1" in problems  # a lemma is a goal too
    assert "isqrt.Square.sqr_non_neg" in problems
    assert {p.category for p in problems.values()} == {"examples"}
    assert all(p.prover == "coq" and p.directory == str(bench.resolve()) for p in problems.values())
    library = why3_tool.coq_library()
    assert (bench / "_CoqProject").read_text() == f"-R {library} Why3\n"


def test_the_statement_is_the_goal_why3_prove_prints(
    problems: dict[str, Problem], tmp_path: Path
) -> None:
    """The same goals, word for word, as `why3 prove -P coq` writes them."""
    subprocess.run(
        ["why3", "-C", str(why3_tool.config()), "prove", "-P", "Coq", "-o", str(tmp_path),
         str(GALLERY / "gcd.mlw")],
        check=True, capture_output=True,
    )  # fmt: skip
    printed = {}
    for file in tmp_path.glob("*.v"):
        header, statement = vc_benchmark.split_vc(file.read_text(), file)
        printed[file.name] = (header, statement)
    ours = [p for p in problems.values() if p.id.startswith("gcd.")]
    assert len(printed) == len(ours) == 13
    assert sorted(printed.values()) == sorted((p.header, p.statement) for p in ours)


def test_problems_of_one_context_share_their_header(problems: dict[str, Problem]) -> None:
    tests = [problems[f"fact.FactRecursive.test{n}'vc"] for n in (0, 1, 7, 42)]
    assert len({p.header for p in tests}) == 1
    assert "Require Import BuiltIn." in tests[0].header
    assert tests[0].statement == "Theorem test0'vc : (0%Z <= 0%Z)%Z."
    # A lemma is an axiom of the goals after it, never of itself or those before it.
    even1, odd1 = problems["gcd.BinaryGcd.even1"], problems["gcd.BinaryGcd.odd1"]
    assert "Axiom even1" not in even1.header and "Axiom even1" in odd1.header


def test_every_statement_type_checks_under_coqc_with_admitted(bench: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(bench, copy)
    library = str(why3_tool.coq_library())
    files = sorted((copy / "vcs").rglob("*.v"))
    assert len(files) == 29
    for file in files:
        assert file.read_text().endswith("\nAdmitted.\n")
        done = subprocess.run(
            ["coqc", "-q", "-R", library, "Why3", file.name],
            cwd=file.parent, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"{file}: {done.stderr}"


def check(jobs: list[tuple[Problem, str]]) -> list[Outcome]:
    got: dict[int, Outcome] = {}
    batch = [Job(Attempt(p.id, i, a, a), p, 60) for i, (p, a) in enumerate(jobs)]
    CoqChecker(CheckSettings(workers=1), lambda a, o: got.__setitem__(a.index, o)).run(batch)
    return [got[i] for i in range(len(jobs))]


def test_a_hand_proof_is_ok_and_admitted_or_new_axioms_are_cheating(
    problems: dict[str, Problem],
) -> None:
    easy = problems["fact.FactRecursive.test0'vc"]
    lemma = problems["isqrt.Square.sqr_non_neg"]
    outcomes = check(
        [
            (easy, "Proof. apply Z.le_refl. Qed."),
            (easy, "Admitted."),
            (easy, "Axiom cheat : forall P : Prop, P. apply cheat."),
            (lemma, "intros x. unfold sqr. apply Z.square_nonneg."),
            (lemma, "intros x. apply Z.le_refl."),
            # The header's own axioms (Why3's definitions) are the context, not cheating.
            (problems["fact.FactRecursive.test1'vc"], "apply Z.le_0_1."),
        ]
    )
    verdicts = [o.verdict for o in outcomes]
    assert verdicts == [
        Verdict.OK,
        Verdict.CHEATING,
        Verdict.CHEATING,
        Verdict.OK,
        Verdict.FAIL,
        Verdict.OK,
    ], [o.message for o in outcomes]


def test_a_source_why3_rejects_is_skipped_with_its_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlw"
    bad.write_text("module M\n  let f (x: int) : int ensures { result = y } = x\nend\n")
    good = tmp_path / "good.mlw"
    good.write_text("module M\n  use int.Int\n  let f (x: int) : int ensures { result = x } = x\n")
    good.write_text(good.read_text() + "end\n")
    out = tmp_path / "bench"
    built = why3_vcs.build([tmp_path], out, {"good.mlw": "mine"})
    assert [p["id"] for p in built.problems] == ["good.M.f'vc"]
    assert built.problems[0]["category"] == "mine"
    assert [s["source"] for s in built.skipped] == [str(bad)]
    assert "unbound" in built.skipped[0]["why"].lower()
    manifest = json.loads((out / vc_benchmark.MANIFEST).read_text())
    assert manifest["skipped"] == built.skipped
    with pytest.raises(InputError, match="no verification conditions"):
        why3_vcs.build([bad], tmp_path / "none", {})
    with pytest.raises(InputError, match="expected a .mlw file"):
        why3_vcs.build([tmp_path / "bench" / "_CoqProject"], tmp_path / "x", {})


def test_the_vc_prompt_shows_the_theory_context(
    bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = "fact.FactRecursive.test0'vc"
    argv = ["prompts", str(bench), "--template", "verification_condition", "--problem", pid]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert "Axiom fact'def" in shown and "Theorem test0'vc : (0%Z <= 0%Z)%Z." in shown
    assert "verification condition" in shown and "Admitted" not in shown


def test_a_goal_name_a_clone_repeats_gets_its_own_id(tmp_path: Path) -> None:
    source = tmp_path / "c.mlw"
    source.write_text(
        "module T\n  type t\n  function op t t : t\n"
        "  axiom assoc: forall x y z: t. op x (op y z) = op (op x y) z\nend\n"
        "module M\n  use int.Int\n  clone T with type t = int, function op = (+), lemma assoc\n"
        "  clone T as U with type t = int, function op = ( * ), lemma assoc\nend\n"
    )
    built = why3_vcs.build([source], tmp_path / "b", {})
    assert [p["id"] for p in built.problems] == ["c.M.assoc", "c.M.assoc.1"]
    problems = load_benchmark(tmp_path / "b").problems
    assert [p.id for p in problems] == ["c.M.assoc", "c.M.assoc.1"]
    assert problems[0].statement != problems[1].statement
