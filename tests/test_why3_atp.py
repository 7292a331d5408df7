"""`baseline --method atp` (Why3's automatic provers through why3_tool.ml) against `why3 prove`
run directly on the same goals, and `select` on its results."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.commands.select import choose, sizes
from proofeval.loaders import why3_vcs as vc_benchmark
from tests.conftest import skip_without_why3_coq_library
from tests.why3_gallery import GALLERY, PROGRAMS, why3_prove_z3

pytestmark = pytest.mark.why3

if shutil.which("why3") is None or not (GALLERY / "fact.mlw").is_file():
    pytest.skip("Why3 and its gallery are not installed (make install)", allow_module_level=True)
skip_without_why3_coq_library(module=True)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("atp") / "bench"
    assert main(["build", "why3", *(str(GALLERY / p) for p in PROGRAMS), "--out", str(out)]) == 0
    return out


def test_the_atp_baseline_agrees_with_why3_prove(bench: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = ["baseline", str(bench), "--method", "atp", "--out", str(run), "--atp-budget", "2",
            "--atp-strategy", "flat", "--atp-prover", "Z3"]  # fmt: skip
    assert main(argv) == 0
    rows = {row["problem_id"]: row for row in csv.DictReader((run / "baseline.csv").open())}
    order = [p["id"] for p in vc_benchmark.manifest(bench)["problems"]]
    ours = [(pid.split(".")[-1], rows[pid]["solved"] == "1") for pid in order]
    direct = why3_prove_z3(2)
    assert ours == direct
    assert 0 < sum(valid for _, valid in direct) < len(direct)  # both answers occur
    assert {rows[pid]["tactic"] for pid in order if rows[pid]["solved"] == "1"} == {"Z3"}
    # Resuming checks nothing again; another setting in the same directory is refused.
    assert main(argv) == 0
    assert main([*argv[:-1], "CVC4"]) == 2


def test_atp_needs_a_vc_benchmark_and_known_provers(bench: Path, tmp_path: Path) -> None:
    assert main(["baseline", str(tmp_path), "--method", "atp", "--out", str(tmp_path / "r")]) == 2
    argv = ["baseline", str(bench), "--method", "atp", "--out", str(tmp_path / "r2")]
    assert main([*argv, "--atp-prover", "Vampire"]) == 2


def test_select_keeps_the_rate_per_category_reproducibly() -> None:
    entries = [{"id": f"{c}{i}", "category": c} for c in "ab" for i in range(20)]
    solved = {e["id"]: int(e["id"][1:]) < (15 if e["category"] == "a" else 2) for e in entries}
    assert sizes(15, 5, 0.25, None) == (2, 5) and sizes(2, 18, 0.25, None) == (2, 7)
    first = choose(entries, solved, 0.25, None, seed=3)
    assert first == choose(entries, solved, 0.25, None, seed=3)
    assert first != choose(entries, solved, 0.25, None, seed=4)
    for category, total, closed in (("a", 7, 2), ("b", 9, 2)):
        group = [e for e in first if e["category"] == category]
        assert (len(group), sum(solved[e["id"]] for e in group)) == (total, closed)
    capped = choose(entries, solved, 0.25, 4, seed=3)
    assert [sum(e["category"] == c for e in capped) for c in "ab"] == [4, 4]


def test_select_writes_a_benchmark_of_the_chosen_problems(bench: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    ids = [p["id"] for p in vc_benchmark.manifest(bench)["problems"]]
    rows = [["problem_id", "category", "solved", "tactic", "seconds"]]
    rows += [[pid, "examples", str(int(i % 4 == 0)), "", ""] for i, pid in enumerate(ids)]
    with (run / "baseline.csv").open("w", newline="") as out:
        csv.writer(out).writerows(rows)
    subset = tmp_path / "subset"
    argv = ["select", str(bench), "--atp", str(run), "--target-pass", "0.25", "--out"]
    assert main([*argv, str(subset)]) == 0
    manifest = json.loads((subset / vc_benchmark.MANIFEST).read_text())
    assert manifest["selection"]["pass"] == 0.25
    chosen = vc_benchmark.load(subset, "subset")
    assert len(chosen) == 16 and {p.id for p in chosen} <= set(ids)
    assert main([*argv, str(subset)]) == 2  # an existing --out is not overwritten
