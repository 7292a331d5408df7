"""Coq toolchains: the host's Coq and a Debian 13 root (`proofeval toolchain add debian13`,
which `make test` builds), chosen by `--coq` or a problem's "coq_toolchain". The checks run
the real coqtop of each; tests that need the root skip, saying so, where it is not built."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq.toolchain import data_dir, installed, resolve
from proofeval.provers.interface import CheckSettings, Job
from proofeval.runs.check import CheckOptions, run_check
from tests.conftest import debian_release

pytestmark = pytest.mark.coq

DEBIAN13 = "debian13"
needs_debian13 = pytest.mark.skipif(
    DEBIAN13 not in installed(),
    reason=f"the Coq toolchain debian13 is not built at {data_dir()} "
    "(`proofeval toolchain add debian13`, or `make toolchain`)",
)
# std++'s bitvector library: in Debian 13's std++ 1.11, not in Debian 12's 1.8. On a Debian
# 13 host the host's own std++ has it too, so there the host loads it as well.
BITVECTOR = "From stdpp Require Import bitvector.\n"
HOST_HAS_BITVECTOR = debian_release() >= 13
STATEMENT = "Theorem thm : forall n : nat, n + 0 = n."


def check_all(problems: list[Problem], answer: str, **settings) -> list[Outcome]:
    got: dict[int, Outcome] = {}
    jobs = [Job(Attempt(p.id, i, answer, answer), p, 60) for i, p in enumerate(problems)]
    CoqChecker(CheckSettings(**settings), lambda a, o: got.__setitem__(a.index, o)).run(jobs)
    return [got[i] for i in range(len(problems))]


def test_the_host_is_the_default_and_unknown_names_are_input_errors() -> None:
    assert resolve("").home is None and resolve("host").home is None
    with pytest.raises(InputError, match="no Coq toolchain 'coq-7.0' is installed"):
        resolve("coq-7.0")


def test_an_unknown_toolchain_is_a_clear_error_before_anything_runs(tmp_path: Path, capsys) -> None:
    problems = tmp_path / "p.jsonl"
    problems.write_text(json.dumps({"id": "p", "prover": "coq", "statement": STATEMENT}) + "\n")
    code = main(["check", str(problems), "--out", str(tmp_path / "run"), "--coq", "nosuch"])
    err = capsys.readouterr().err
    assert code == 2 and "no Coq toolchain 'nosuch' is installed" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_a_problem_naming_a_toolchain_that_is_not_built_is_an_error_not_a_crash() -> None:
    prob = Problem(id="p", statement=STATEMENT, prover="coq", coq_toolchain="nosuch")
    (outcome,) = check_all([prob], "intros; lia.")
    assert outcome.verdict is Verdict.ERROR and "no Coq toolchain 'nosuch'" in outcome.message


@needs_debian13
def test_the_toolchain_is_listed_with_its_version(capsys) -> None:
    assert main(["toolchain", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("debian13\tCoq 8.20.") for line in lines), lines
    assert resolve("8.20").name == DEBIAN13  # a version prefix names it too


@needs_debian13
def test_the_toolchain_runs_its_own_coq_and_libraries() -> None:
    """A header only Debian 13's std++ has loads on the toolchain and not on the host:
    the session really runs the root's coqtop with the root's libraries."""
    header = f"{BITVECTOR}Require Import Lia.\n"
    on_root = Problem(id="r", statement=STATEMENT, prover="coq", header=header)
    (outcome,) = check_all([on_root], "intros; lia.", coq_toolchain=DEBIAN13)
    assert outcome.verdict is Verdict.OK, outcome
    (host,) = check_all([on_root], "intros; lia.")
    if HOST_HAS_BITVECTOR:
        assert host.verdict is Verdict.OK, host
    else:
        assert host.verdict is Verdict.ERROR and "does not load" in host.message


@needs_debian13
def test_each_problem_runs_on_the_toolchain_it_names(tmp_path: Path) -> None:
    """One benchmark mixes both: the JSONL field chooses, and --coq overrides it."""
    rows = [
        {"id": "new", "prover": "coq", "header": BITVECTOR, "statement": STATEMENT,
         "coq_toolchain": DEBIAN13},
        {"id": "old", "prover": "coq", "header": BITVECTOR, "statement": STATEMENT},
    ]  # fmt: skip
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps(row) + "\n" for row in rows))
    answers = tmp_path / "answers.jsonl"
    answer = "intros. induction n; simpl; congruence."
    answers.write_text(
        "".join(json.dumps({"problem_id": r["id"], "answer": answer}) + "\n" for r in rows)
    )
    out = run_check(CheckOptions(problems=problems, out=tmp_path / "run", answers=answers))
    old = "OK" if HOST_HAS_BITVECTOR else "ERROR"
    assert {row.problem_id: row.verdict for row in out} == {"new": "OK", "old": old}
    # the run records the exact provers that checked it
    provers = json.loads((tmp_path / "run" / "provers.json").read_text())["provers"]
    assert provers == [f"Coq {resolve('').version()} (host)", "Coq 8.20.1 (debian13)"]
    settings = CheckSettings(coq_toolchain=DEBIAN13)
    opts = CheckOptions(problems=problems, out=tmp_path / "all", answers=answers, settings=settings)
    assert [row.verdict for row in run_check(opts)] == ["OK", "OK"]


@needs_debian13
def test_the_toolchain_sandbox_shows_the_root_and_not_the_host() -> None:
    """Inside the sandbox /usr is the root's (Debian 13's os-release), read-only, and the
    host's home does not exist."""
    chain = resolve(DEBIAN13)
    done = subprocess.run(
        [*chain.sandbox(), "/bin/sh", "-c",
         "cat /usr/lib/os-release; touch /usr/x 2>&1; ls /root 2>&1"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert "VERSION_CODENAME=trixie" in done.stdout
    assert "Read-only file system" in done.stdout and "No such file" in done.stdout


@needs_debian13
def test_a_header_variable_outside_a_section_is_8_16s_warning_on_8_20() -> None:
    """8.20 made it an error by default; PutnamBench's contexts declare their variables
    so. The header's assumption stays allowed, an answer's own axiom does not."""
    header = "Require Import Lia.\nVariable k : nat.\nHypothesis hk : k = 2.\n"
    prob = Problem(id="v", statement="Theorem thm : k + 0 = 2.", prover="coq", header=header)
    (honest,) = check_all([prob], "rewrite hk. reflexivity.", coq_toolchain=DEBIAN13)
    assert honest.verdict is Verdict.OK, honest
    forged = "Axiom cheat : k + 0 = 2. exact cheat."
    (cheat,) = check_all([prob], forged, coq_toolchain=DEBIAN13)
    assert cheat.verdict is not Verdict.OK, cheat


@needs_debian13
def test_baseline_runs_on_the_toolchain_a_version_names(tmp_path: Path, capsys) -> None:
    row = {"id": "a", "prover": "coq", "header": f"{BITVECTOR}Require Import Lia.\n",
           "statement": STATEMENT}  # fmt: skip
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps(row) + "\n")
    out = tmp_path / "run"
    args = ["baseline", str(bench), "--out", str(out), "--method", "portfolio"]
    assert main([*args, "--tactic-timeout", "10", "--workers", "1", "--coq", "8.20"]) == 0
    assert "closed by: lia 1" in capsys.readouterr().err
    provers = json.loads((out / "provers.json").read_text())["provers"]
    assert provers == ["Coq 8.20.1 (debian13)"]
