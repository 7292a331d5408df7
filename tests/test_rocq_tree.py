"""Rocq trees as published, in PutnamBench's shape (coq/src/*.v, no manifest): ids from
paths, a file whose theorem is not named like it, files that do not load, --only,
--manifest of any name, categories by a scheme; then `check` on real Coq."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.loaders import LAYOUTS, Selection, load_benchmark

pytestmark = pytest.mark.coq

FILES = {
    "putnam_2001_a1.v": "Require Import Arith Lia.\n\n"
    "Definition putnam_2001_a1_solution : nat := 3.\n"
    "Theorem putnam_2001_a1 : putnam_2001_a1_solution = 3.\nProof. Admitted.\n",
    # PutnamBench's putnam_1968_a1.v states putnam_1968_b1: read by its one Admitted theorem
    "putnam_1968_a1.v": "Require Import Arith Lia.\n"
    "Theorem putnam_1968_b1 : forall n : nat, n + 0 = n.\nProof. Admitted.\n",
    "putnam_2002_b3.v": "From Coq Require Import Arith.\nRequire Import Coquelicot.Coquelicot.\n"
    "Theorem putnam_2002_b3 : 2 + 2 = 4.\nProof. Admitted.\n",
    # two Admitted theorems, none named as the file: which is the case is not clear
    "putnam_1999_b2.v": "Theorem one : True.\nProof. Admitted.\n"
    "Theorem two : True.\nProof. Admitted.\n",
    "putnam_2010_a2.v": "(* a comment never closed\nTheorem putnam_2010_a2 : True.\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A PutnamBench-shaped checkout: coq/src/*.v beside a README and setup.sh."""
    coq = tmp_path / "PutnamBench" / "coq"
    (coq / "src").mkdir(parents=True)
    (coq / "README.md").write_text("# Coq\n")
    (coq / "setup.sh").write_text("opam install coq\n")
    for name, text in FILES.items():
        (coq / "src" / name).write_text(text)
    return coq


def test_the_tree_loads_without_a_manifest_and_skips_what_does_not_load(tree: Path) -> None:
    for path in (tree, tree / "src"):
        bench = load_benchmark(path)
        ids = [p.id for p in bench.problems]
        assert ids == ["putnam_1968_a1", "putnam_2001_a1", "putnam_2002_b3"]
        mismatched = bench.problems[0]
        assert mismatched.statement == "Theorem putnam_1968_b1 : forall n : nat, n + 0 = n."
        assert mismatched.header == "Require Import Arith Lia.\n"
        assert mismatched.prover == "coq" and mismatched.directory == ""
        assert "putnam_2001_a1_solution : nat := 3" in bench.problems[1].header
        skipped = {s.path: s.reason for s in bench.skipped}
        assert set(skipped) == {"putnam_1999_b2", "putnam_2010_a2"}
        assert "2 with `Admitted` (one, two)" in skipped["putnam_1999_b2"]
        assert "does not split into sentences" in skipped["putnam_2010_a2"]


def test_a_tree_with_a_coq_project_gives_its_root_as_the_directory(tree: Path) -> None:
    (tree / "src" / "_CoqProject").write_text("-Q lib Lib\n")
    bench = load_benchmark(tree)
    assert {p.directory for p in bench.problems} == {str((tree / "src").resolve())}


def test_categories_by_year_library_or_pattern(tree: Path) -> None:
    def categories(scheme: str) -> list[str]:
        return [p.category for p in load_benchmark(tree, Selection(categories=scheme)).problems]

    assert categories("directory") == ["uncategorized"] * 3
    assert categories("year") == ["1968", "2001", "2002"]
    assert categories("library") == ["stdlib", "stdlib", "coquelicot"]
    assert categories(r"_([ab])\d$") == ["a", "a", "b"]
    with pytest.raises(InputError, match="--categories '\\(': neither directory, year, library"):
        load_benchmark(tree, Selection(categories="("))


def test_only_selects_by_id_glob_or_file_and_a_pattern_matching_nothing_is_an_error(
    tree: Path, tmp_path: Path
) -> None:
    bench = load_benchmark(tree, Selection(only=("putnam_20*",)))
    assert [p.id for p in bench.problems] == ["putnam_2001_a1", "putnam_2002_b3"]
    assert bench.unselected == {"putnam_1968_a1"}
    assert bench.skipped == [s for s in load_benchmark(tree).skipped if s.path == "putnam_2010_a2"]
    listed = tmp_path / "ids.txt"
    listed.write_text("# type-check\nputnam_1968_a1\n\nputnam_2002_b3\n")
    bench = load_benchmark(tree, Selection(only=(f"@{listed}", "putnam_2001_a1")))
    assert len(bench.problems) == 3
    with pytest.raises(InputError, match="'putnam_2099\\*' matches no problem"):
        load_benchmark(tree, Selection(only=("putnam_1968_a1,putnam_2099*",)))
    # a case list names its cases by their files (NTP4VC's test_set.rocq.lst)
    bench = load_benchmark(tree, Selection(only=("putnam_2001_a1.v", "putnam_2002_b3.v")))
    assert [p.id for p in bench.problems] == ["putnam_2001_a1", "putnam_2002_b3"]
    with pytest.raises(InputError, match="'putnam_2099.v' matches no problem"):
        load_benchmark(tree, Selection(only=("putnam_2099.v",)))


def test_a_manifest_of_any_name(tree: Path) -> None:
    manifest = tree / "my-subset.lst"
    manifest.write_text("src/putnam_2001_a1.v\nsrc/putnam_2010_a2.v\n")
    bench = load_benchmark(tree, Selection(manifest=manifest))
    assert [p.id for p in bench.problems] == ["src/putnam_2001_a1"]
    assert [s.path for s in bench.skipped] == ["src/putnam_2010_a2"]
    with pytest.raises(InputError, match="--manifest .*nope.txt: no such file"):
        load_benchmark(tree, Selection(manifest=tree / "nope.txt"))


def test_a_directory_with_no_benchmark_names_every_layout(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as caught:
        load_benchmark(tmp_path / "empty")
    assert LAYOUTS in str(caught.value)
    for layout in ("s2n-bignum-bench", "plain tree of Rocq .v files", "--manifest", "miniF2F"):
        assert layout in LAYOUTS


def test_problems_command_warns_once_about_skipped_cases(tree: Path, capsys) -> None:
    assert main(["problems", str(tree), "--categories", "year"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "putnam_1968_a1\t1968",
        "putnam_2001_a1\t2001",
        "putnam_2002_b3\t2002",
    ]
    assert err.count("\n") == 1 and "skipped 2 cases that do not load" in err


def test_check_a_subset_of_the_tree_as_published(tree: Path, tmp_path: Path, capsys) -> None:
    answers = tmp_path / "answers.csv"
    with answers.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem_id", "answer"])
        w.writerow(["putnam_1968_a1", "```coq\nintros n. lia.\n```"])
        w.writerow(["putnam_2001_a1", "reflexivity."])
        w.writerow(["putnam_2002_b3", "reflexivity."])  # left out by --only: not unknown
    run = tmp_path / "run"
    only = "putnam_1968_a1,putnam_2001_a1"
    argv = ["check", str(tree), "--only", only, "--answers", str(answers), "--out", str(run)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    total = out.strip().splitlines()[-1].split()
    assert total[:5] == ["Total", "2", "2", "2", "2"] and total[-1] == "100.0%"
    assert "1 answer is for problems --only leaves out: not checked" in err
    with (run / "results.csv").open(newline="") as f:
        verdicts = {r["problem_id"]: r["verdict"] for r in csv.DictReader(f)}
    assert verdicts == {"putnam_1968_a1": "OK", "putnam_2001_a1": "OK"}
