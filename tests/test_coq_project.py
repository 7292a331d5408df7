"""A tree's libraries on a toolchain: installed libraries judged in the toolchain's own
root, a library's error showing Coq's `Error:` part, the header's dependencies kept in the
build cache. Real Coq, on the host and on every built toolchain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Verdict
from proofeval.provers.coq import CoqChecker, hammer
from proofeval.provers.coq.project import TreeCopy, error_part, installed_library
from proofeval.provers.coq.toolchain import Toolchain, installed, resolve
from proofeval.provers.interface import CheckSettings, Job
from tests.coq_chains import CHAINS

pytestmark = pytest.mark.coq

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

needs_debian13 = pytest.mark.skipif(
    "debian13" not in installed(), reason="`proofeval toolchain add debian13` first"
)


def project_tree(root: Path, coq_project: str, case: str, files: dict[str, str] = {}) -> Path:  # noqa: B006
    for relative, text in {"_CoqProject": coq_project, "cases.txt": "c.v\n", "c.v": case,
                           **files}.items():  # fmt: skip
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def check(root: Path, answer: str, chain: str) -> tuple[Outcome, list[str]]:
    (problem,) = load_benchmark(root).problems
    got: list[Outcome] = []
    events: list[str] = []
    job = Job(Attempt(problem.id, 0, answer, answer), problem, 60.0)
    settings = CheckSettings(workers=1, coq_toolchain=chain)
    CoqChecker(settings, lambda _a, o: got.append(o), events.append).run([job])
    return got[0], events


def test_an_installed_library_is_judged_in_the_toolchains_root(tmp_path: Path) -> None:
    chain = Toolchain("fake", tmp_path)
    (tmp_path / "root/usr/lib/coq/Lib").mkdir(parents=True)
    assert installed_library("/usr/lib/coq/Lib", chain) == tmp_path / "root/usr/lib/coq/Lib"
    assert installed_library("theories", chain) is None  # the tree's own
    assert installed_library("/etc", chain) is None  # not a library of the system
    assert installed_library("/usr/../etc", chain) is None
    host = installed_library("/usr/lib", Toolchain())
    assert host == Path("/usr/lib").resolve()


# What the two Debian releases install their Coq libraries under (stdpp in both).
HOST_ONLY = "/usr/lib/ocaml/coq/user-contrib/stdpp"
DEBIAN13_ONLY = "/usr/lib/x86_64-linux-gnu/ocaml/5.3.0/coq/user-contrib/stdpp"
STDPP_CASE = "From stdpp Require Import base.\nTheorem t : 1 = 1.\nAdmitted.\n"


@needs_debian13
def test_a_library_installed_in_the_toolchain_only_is_used_there(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "t", f"-Q {DEBIAN13_ONLY} stdpp\n", STDPP_CASE)
    outcome, _events = check(root, "Proof. reflexivity. Qed.", "debian13")
    assert outcome.verdict is Verdict.OK, outcome


@needs_debian13
@pytest.mark.skipif(not Path(HOST_ONLY).is_dir(), reason=f"the host has no {HOST_ONLY}")
def test_a_library_installed_on_the_host_only_is_missing_in_the_toolchain(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "t", f"-Q {HOST_ONLY} stdpp\n", STDPP_CASE)
    outcome, _events = check(root, "Proof. reflexivity. Qed.", "debian13")
    assert outcome.verdict is Verdict.ERROR
    assert f"no directory {HOST_ONLY} in the Coq of Coq 8.20.1 (debian13)" in outcome.message


# Many warnings, then the error: the message must keep the error.
NOISY = (
    '#[deprecated(since="1", note="old")] Notation old := 0.\n'
    + "".join(f"Definition use{i} := old.\n" for i in range(30))
    + "Definition broken := no_such_reference.\n"
)


@pytest.mark.parametrize("chain", CHAINS)
def test_a_library_error_keeps_coqs_error_part(tmp_path: Path, chain: str) -> None:
    root = project_tree(
        tmp_path / "t", "-Q theories Lib\n", "Require Import Lib.Noisy.\nTheorem t : 1 = 1.\n"
        "Admitted.\n", {"theories/Noisy.v": NOISY},
    )  # fmt: skip
    outcome, _events = check(root, "Proof. reflexivity. Qed.", chain)
    assert outcome.verdict is Verdict.ERROR
    assert "the library file theories/Noisy.v does not compile: Error:" in outcome.message
    assert "no_such_reference" in outcome.message


def test_error_part_starts_at_the_last_error() -> None:
    said = "Warning: a\n" * 40 + "Error: The reference x was not found.\n" + "Warning: b\n" * 40
    assert error_part(said).startswith("Error: The reference x was not found. Warning: b")
    assert error_part("just words") == "just words"


@pytest.mark.parametrize("chain", CHAINS)
def test_a_second_run_asks_coqdep_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chain: str
) -> None:
    """What coqdep said (of the header, of the library files) comes from the build cache;
    a new file under the load paths asks coqdep again."""
    monkeypatch.setenv("PROOFEVAL_COQ_CACHE", str(tmp_path / "cache"))
    ran: list[str] = []
    real_run = TreeCopy.run

    def recording(self: TreeCopy, command: list[str]):  # the real run, recorded
        ran.append(command[0])
        return real_run(self, command)

    monkeypatch.setattr(TreeCopy, "run", recording)
    case = "Require Import Lib.A.\nTheorem t : a = 1.\nAdmitted.\n"
    files = {"theories/A.v": "Definition a := 1.\n"}
    root = project_tree(tmp_path / "t", "-Q theories Lib\n", case, files)
    outcome, _ = check(root, "Proof. reflexivity. Qed.", chain)
    assert outcome.verdict is Verdict.OK, outcome
    assert ran == ["coqdep", "coqdep", "coqc"]  # the library, the header; A.v compiled
    kept = [json.loads(f.read_text()) for f in (tmp_path / "cache").glob("*.json")]
    assert [k for k in kept if isinstance(k, list)] == [["theories/A.vo"]]
    ran.clear()
    outcome, _ = check(root, "Proof. reflexivity. Qed.", chain)
    assert outcome.verdict is Verdict.OK, outcome
    assert ran == []  # A.vo from the cache, and coqdep asked nothing
    # a new library file under the load path: what coqdep finds may differ, so ask again
    (root / "theories/B.v").write_text("Definition b := 2.\n")
    outcome, _ = check(root, "Proof. reflexivity. Qed.", chain)
    assert outcome.verdict is Verdict.OK, outcome
    assert ran == ["coqdep", "coqdep"]


def test_coqhammers_atps_are_looked_for_in_the_toolchains_root(tmp_path: Path) -> None:
    (tmp_path / "usr/bin").mkdir(parents=True)
    program = tmp_path / "usr/bin/eprover"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    present, missing = hammer.atps(tmp_path)
    assert present == ["E"] and sorted(missing) == ["CVC4", "Vampire", "Z3"]


@needs_debian13
def test_debian13s_atps_are_its_own() -> None:
    present, _missing = hammer.atps(resolve("debian13").root)
    assert {"E", "CVC4"} <= set(present)


@needs_debian13
def test_baseline_hammer_says_which_atps_the_toolchain_it_ran_on_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "b.jsonl"
    bench.write_text('{"id": "a", "prover": "coq", "statement": "Theorem a : 1 = 1."}\n')
    out = tmp_path / "run"
    args = ["baseline", str(bench), "--out", str(out), "--method", "hammer", "--coq", "debian13"]
    assert main([*args, "--tactic-timeout", "20", "--workers", "1"]) == 0
    present, missing = hammer.atps(resolve("debian13").root)
    said = capsys.readouterr().err
    assert (
        f"CoqHammer's ATPs in Coq 8.20.1 (debian13): {', '.join(present)} present; "
        f"{', '.join(missing)} missing" in said
    )


@pytest.mark.parametrize("chain", CHAINS)
def test_directories_of_one_tree_share_its_copy_each_with_its_own_load_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chain: str
) -> None:
    """Case a's theory Top holds sub/S.v, which needs a theory a's load paths do not
    have: read then, its needs are not found. Case b needs it with the right paths: it
    must compile after Other.O, not be taken from what a's coqdep said."""
    monkeypatch.setenv("PROOFEVAL_COQ_CACHE", str(tmp_path / "cache"))
    files = {
        "dune-workspace": "(lang dune 3.0)\n",
        "theories/dune": "(coq.theory (name Top))\n",
        "theories/T.v": "Definition t := 1.\n",
        "theories/sub/dune": "(coq.theory (name Top.sub) (theories Other))\n",
        "theories/sub/S.v": "Require Import Other.O.\nDefinition s := o.\n",
        "other/dune": "(coq.theory (name Other))\n",
        "other/O.v": "Definition o := 2.\n",
        "cases/a/dune": "(coq.theory (name ca) (theories Top))\n",
        "cases/a/a.v": "Require Import Top.T.\nTheorem a : t = 1.\nAdmitted.\n",
        "cases/b/dune": "(coq.theory (name cb) (theories Top.sub))\n",
        "cases/b/b.v": "Require Import Top.sub.S.\nTheorem b : s = 2.\nAdmitted.\n",
        "cases.txt": "cases/a/a.v\ncases/b/b.v\n",
    }
    root = tmp_path / "t"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    problems = load_benchmark(root).problems
    got: dict[str, Outcome] = {}
    events: list[str] = []
    answer = "Proof. reflexivity. Qed."
    jobs = [Job(Attempt(p.id, 0, answer, answer), p, 60.0) for p in problems]
    settings = CheckSettings(workers=1, coq_toolchain=chain)
    CoqChecker(settings, lambda a, o: got.__setitem__(a.problem_id, o), events.append).run(jobs)
    assert {pid: o.verdict for pid, o in got.items()} == dict.fromkeys(
        ["cases/a/a", "cases/b/b"], Verdict.OK
    ), got
    said = "\n".join(events)
    assert "library files: 3 compiled" in said, said  # T, O, S: each once
