"""`proofeval build frama-c` on a small annotated C file written here: Frama-C's WP
generates the VCs, Why3's Coq driver prints them, and the Coq backend checks them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proofeval.builders import why3_tool
from proofeval.cli import main
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.interface import CheckSettings, Job
from tests.conftest import debian_release

pytestmark = [pytest.mark.why3, pytest.mark.coq]

if shutil.which("why3") is None:
    pytest.skip("Why3 is not installed (make install)", allow_module_level=True)
if shutil.which("frama-c") is None:
    why = "Debian 13 has no frama-c-base package" if debian_release() >= 13 else "make install"
    pytest.skip(f"Frama-C is not installed ({why})", allow_module_level=True)

SOURCE = """/*@ requires 0 <= x <= 1000;
    assigns \\nothing;
    ensures \\result == x * x;
*/
int square(int x) {
  return x * x;
}

/*@ requires \\valid(p) && \\valid(q) && \\separated(p, q);
    assigns *p, *q;
    ensures *p == \\old(*q) && *q == \\old(*p);
*/
void swap(int *p, int *q) {
  int t = *p;
  *p = *q;
  *q = t;
}
"""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wp")
    (root / "src").mkdir()
    (root / "src" / "square.c").write_text(SOURCE)
    assert main(["build", "frama-c", str(root / "src" / "square.c"), "--out", str(root / "b")]) == 0
    return root / "b"


def test_wp_goals_become_problems_that_type_check(bench: Path, tmp_path: Path) -> None:
    problems = {p.id: p for p in load_benchmark(bench).problems}
    # The goals WP's simplifier does not discharge, named as WP names them.
    assert "square.typed_square_assert_rte_signed_overflow" in problems
    assert "square.typed_swap_assert_rte_mem_access" in problems
    assert {p.category for p in problems.values()} == {"src"}
    assert all(p.statement.startswith("Theorem wp_goal :") for p in problems.values())
    shutil.copytree(bench, tmp_path / "copy")
    files = sorted((tmp_path / "copy" / "vcs").rglob("*.v"))
    assert len(files) == len(problems)
    for file in files:
        done = subprocess.run(
            ["coqc", "-q", "-R", str(why3_tool.coq_library()), "Why3", file.name],
            cwd=file.parent, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"{file}: {done.stderr}"


def test_a_hand_proof_is_ok_and_admitted_is_cheating(bench: Path) -> None:
    problems = {p.id: p for p in load_benchmark(bench).problems}
    easy = problems["square.typed_square_assert_rte_signed_overflow"]
    answers = [
        "intros i h1 h2 h3. apply Z.le_trans with (m := 0%Z). easy. apply Z.square_nonneg.",
        "Admitted.",
        "intros i h1 h2 h3. easy.",
    ]
    got: dict[int, Outcome] = {}
    jobs = [Job(Attempt(easy.id, i, a, a), easy, 60) for i, a in enumerate(answers)]
    CoqChecker(CheckSettings(workers=1), lambda a, o: got.__setitem__(a.index, o)).run(jobs)
    verdicts = [got[i].verdict for i in range(len(answers))]
    assert verdicts == [Verdict.OK, Verdict.CHEATING, Verdict.FAIL]


def test_the_atp_method_and_complicate_say_they_do_not_apply(bench: Path, tmp_path: Path) -> None:
    argv = ["baseline", str(bench), "--method", "atp", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    source = tmp_path / "s.c"
    source.write_text(SOURCE)
    argv = ["build", "frama-c", str(source), "--complicate", "--out", str(tmp_path / "b")]
    assert main(argv) == 2
