"""A tree's Coq toolchain detected from its own dune-project / opam constraint, when neither
--coq nor the problem names one; the run says which and why. Small trees of our own; the
checks run in the real Coq of the chosen toolchain."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Verdict
from proofeval.provers import registry
from proofeval.provers.coq import CoqChecker, detect
from proofeval.provers.coq.toolchain import installed, resolve
from proofeval.provers.interface import CheckSettings, Job

pytestmark = pytest.mark.coq

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

HOST = resolve("").version()
needs_debian13 = pytest.mark.skipif(
    "debian13" not in installed(), reason="`proofeval toolchain add debian13` first"
)
# Loads only with Debian 13's std++ (1.11, with stdpp.bitvector): on the host's it fails.
CASE = """From stdpp.bitvector Require Import definitions.
Require Import Lib.Lib.

Theorem seven : three + 4 = 7.
Admitted.
"""


def tree(root: Path, project_files: dict[str, str]) -> Path:
    files = {
        "dune-workspace": "(lang dune 3.0)\n",
        "lib/dune": "(coq.theory (name Lib))\n",
        "lib/Lib.v": "Definition three := 3.\n",
        "cases/dune": "(coq.theory (name cases) (theories Lib))\n",
        "cases/seven.v": CASE,
        "cases.txt": "cases/seven.v\n",
        **project_files,
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


# --- reading the constraint -------------------------------------------------------------


def test_dune_and_opam_constraints_are_read() -> None:
    packages, rocq = detect.dune_project(
        '(lang dune 3.19)\n(using coq 0.8)\n(package (name B)\n (depends (coq (= "9.0.0"))\n'
        ' (coq-stdpp (= "1.12.0")) ocaml))\n'
    )
    assert not rocq
    assert detect._dune_depends(packages["B"])[0] == ("coq", ("=", "9.0.0"))
    _packages, rocq = detect.dune_project("(lang dune 3.19)\n(using rocq 0.11)\n")
    assert rocq
    depends = detect.opam_depends(
        'opam-version: "2.0"\ndepends: [\n  "ocaml"\n  "coq-core" {>= "8.20" & < "8.21~"}\n'
        '  "rocq-core" {= "9.0.0" | with-test}\n]\nbuild: [ "dune" ]\n'
    )
    assert depends == [
        ("ocaml", None),
        ("coq-core", ("and", [(">=", "8.20"), ("<", "8.21~")])),
        ("rocq-core", None),  # an alternative asks nothing of the version
    ]


@pytest.mark.parametrize(
    ("version", "formula", "expected"),
    [
        ("8.20.1", ("and", [(">=", "8.20"), ("<", "8.21~")]), True),
        ("8.21", ("and", [(">=", "8.20"), ("<", "8.21~")]), False),
        ("8.21.0", ("<", "8.21~"), False),
        ("8.16.1", (">=", "8.18"), False),
        ("9.0", ("=", "9.0.0"), True),
        ("8.20.1", ("or", [("=", "8.16.1"), ("=", "8.20.1")]), True),
    ],
)
def test_versions_compare_the_opam_way(version: str, formula: object, expected: bool) -> None:
    assert detect.satisfies(version, formula) is expected


def test_a_case_project_inherits_the_constraint_of_a_package_of_its_tree(tmp_path: Path) -> None:
    """NTP4VC's shape: the case's dune-project depends on the library's package, whose
    dune-project pins Coq."""
    root = tree(tmp_path / "t", {
        "lib/dune-project": '(lang dune 3.19)\n(package (name Base) (depends (coq (>= "8.0"))))\n',
        "cases/dune-project": "(lang dune 3.19)\n(package (name Cases) (depends Base))\n",
    })  # fmt: skip
    (found,) = detect.constraints(root / "cases")
    assert (found.where, found.package, found.formula) == ("lib/dune-project", "coq", (">=", "8.0"))


# --- choosing -----------------------------------------------------------------------------


def test_no_constraint_keeps_the_host(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {})
    assert detect.choose(str(root / "cases")) == detect.Choice("", "")


def test_a_constraint_the_host_meets_chooses_the_newest_that_meets_it(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {"proj.opam": 'depends: [ "coq" {>= "8.16"} ]\n'})
    choice = detect.choose(str(root / "cases"))
    newest = max(["host", *installed()], key=lambda n: detect.version_key(resolve(n).version()))
    assert choice.name == ("" if newest == "host" else newest)
    assert "as the tree asks: coq >= 8.16 (proj.opam)" in choice.reason and not choice.warning


def test_a_constraint_no_toolchain_meets_is_a_warning_naming_toolchain_add(
    tmp_path: Path,
) -> None:
    root = tree(tmp_path / "t", {"dune-project": "(lang dune 3.19)\n(using rocq 0.11)\n"})
    choice = detect.choose(str(root / "cases"))
    assert choice.warning
    assert "no installed Coq satisfies Rocq (the dune language) >= 9.0" in choice.reason
    assert "proofeval toolchain add" in choice.reason and "\n" not in choice.reason


def check(root: Path, answer: str, coq: str = "") -> tuple[Outcome, list[str]]:
    (problem,) = load_benchmark(root).problems
    got: list[Outcome] = []
    events: list[str] = []
    settings = CheckSettings(workers=1, coq_toolchain=coq)
    job = Job(Attempt(problem.id, 0, answer, answer), problem, 60.0)
    CoqChecker(settings, lambda _a, o: got.append(o), events.append).run([job])
    return got[0], events


@needs_debian13
def test_the_checker_runs_on_the_toolchain_the_tree_asks_for_and_says_why(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {"cases.opam": 'depends: [ "coq-core" {>= "8.20"} ]\n'})
    chosen = detect.choose(str(root / "cases"))
    name = chosen.name or "host"  # a Debian 13 host's own 8.20 wins a tie
    outcome, events = check(root, "Proof. reflexivity. Qed.")
    assert outcome.verdict is Verdict.OK, outcome  # std++'s bitvector: Debian 13's only
    said = "\n".join(events)
    assert f"Coq toolchain: Coq 8.20.1 ({name}), as the tree asks: coq-core >= 8.20" in said
    problems = load_benchmark(root).problems
    assert _versions(problems) == [f"Coq 8.20.1 ({name})"]
    # --coq still overrides what the tree asks
    outcome, events = check(root, "Proof. reflexivity. Qed.", coq="host")
    if HOST.startswith("8.16"):  # Debian 12's std++ has no bitvector
        assert outcome.verdict is Verdict.ERROR and "does not load" in outcome.message
    assert not any("Coq toolchain:" in e for e in events)


def test_without_a_constraint_the_tree_runs_on_the_host(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {})
    outcome, events = check(root, "Proof. reflexivity. Qed.")
    if HOST.startswith("8.16"):  # Debian 12's std++ has no bitvector: the host's Coq ran
        assert outcome.verdict is Verdict.ERROR and "does not load" in outcome.message, outcome
    assert not any("Coq toolchain:" in e for e in events)
    assert _versions(load_benchmark(root).problems) == [f"Coq {HOST} (host)"]


def _versions(problems: list) -> list[str]:
    return [system.description for system in registry.systems(problems, CheckSettings())]
