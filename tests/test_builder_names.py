"""Theorem names with primes (issue 17): every top-level binding of a `prove` is its own
problem, named as the source spells it, on disk too; what the builder merges or drops is
counted in its summary, with the reason. Cheap: sources are only parsed, and the one check
runs a handful of small references."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path

import pytest

from proofeval.builders.hol_light import (
    MET_AGAIN,
    SAME_GOAL,
    Builder,
    BuildOptions,
    BuildReport,
    build,
    write_benchmark,
)
from proofeval.commands import build as build_command
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark, s2n_layout
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

PRIMES = """let ADD_0 = prove(`!n. n + 0 = n`, ARITH_TAC);;

(* A prime-only difference, and the same goal proved again another way. *)
let ADD_0' = prove
 (`!n. n + 0 = n`,
  REWRITE_TAC[ADD_CLAUSES]);;

(* Two primed variants whose goals differ; two primes. *)
let SYM' = prove(`!m n. m + n = n + m`, ARITH_TAC);;
let SYM'' = prove(`!m n p. m + n + p = p + n + m`, ARITH_TAC);;
let SYM = prove(`!m n. m * n = n * m`, ARITH_TAC)
let x'y = prove(`!n. n * 1 = n`, ARITH_TAC)

(* One primed name bound twice: .0 and .1. *)
let TWICE' = prove(`!n. n + n = 2 * n`, ARITH_TAC);;
let TWICE' = prove(`!n. 2 * n = n + n`, ARITH_TAC);;
"""

# A second source that loads the first: its theorems are met again there.
USER = """needs "pr/primes.ml";;

let USE' = prove(`!n. 0 + n = n`, ONCE_REWRITE_TAC[ADD_SYM] THEN REWRITE_TAC[ADD_0']);;
"""

IDS = {
    "pr.primes.ADD_0": "`!n. n + 0 = n`",
    "pr.primes.ADD_0'": "`!n. n + 0 = n`",
    "pr.primes.SYM'": "`!m n. m + n = n + m`",
    "pr.primes.SYM''": "`!m n p. m + n + p = p + n + m`",
    "pr.primes.SYM": "`!m n. m * n = n * m`",
    "pr.primes.x'y": "`!n. n * 1 = n`",
    "pr.primes.TWICE'.0": "`!n. n + n = 2 * n`",
    "pr.primes.TWICE'.1": "`!n. 2 * n = n + n`",
    "pr.user.USE'": "`!n. 0 + n = n`",
}


def write_sources(root: Path) -> tuple[Path, Path]:
    (root / "pr").mkdir(parents=True)
    (root / "pr/primes.ml").write_text(PRIMES)
    (root / "pr/user.ml").write_text(USER)
    return root / "pr/primes.ml", root / "pr/user.ml"


@pytest.fixture(scope="module")
def primed(hol_base: WarmProcess, tmp_path_factory) -> tuple[Path, BuildReport]:
    top = tmp_path_factory.mktemp("primes")
    sources = write_sources(top / "dev")
    report = build(BuildOptions(sources, top / "bench", top / "dev"), hol_base)
    return top / "bench", report


def info(bench: Path) -> dict:
    return json.loads((bench / "proofeval-build.json").read_text())


def test_every_binding_is_a_problem_named_with_its_primes(primed) -> None:
    bench, report = primed
    problems = json.loads((bench / "problems.json").read_text())
    assert {pid: p["query"] for pid, p in problems.items()} == IDS
    assert [p.id for p in report.problems] == list(IDS)  # in source order
    assert problems["pr.primes.SYM''"]["legacy_id"] == "pr.primes.10.SYM''"
    assert problems["pr.primes.SYM''"]["json"]["theorem_name"] == "SYM''"
    refs = {
        r["problem_id"]: r["answer"]
        for r in map(json.loads, (bench / "references.jsonl").read_text().splitlines())
    }
    assert refs["pr.primes.ADD_0"] == "ARITH_TAC"
    assert refs["pr.primes.ADD_0'"] == "REWRITE_TAC[ADD_CLAUSES]"
    # The primed theorem's context has the unprimed one, admitted.
    setup = (bench / "pr.primes.ADD_0'" / "setup.ml").read_text()
    assert "let ADD_0 = prove(`!n. n + 0 = n`, CHEAT_TAC);;" in setup
    assert "ADD_0'" not in setup


def test_primed_ids_name_their_own_directories(primed) -> None:
    bench, _ = primed
    dirs = {d.name for d in bench.iterdir() if d.is_dir() and d.name != "ml_files"}
    assert dirs == set(IDS)
    for pid, query in IDS.items():
        assert (bench / pid / "query.txt").read_text() == query + "\n"
    # A prime-only difference does not collide with the unprimed name.
    assert not (bench / "pr.primes.ADD_0").samefile(bench / "pr.primes.ADD_0'")
    assert (bench / "pr.primes.ADD_0" / "setup.ml").read_text() != (
        bench / "pr.primes.ADD_0'" / "setup.ml"
    ).read_text()


def test_the_summary_counts_merges_and_drops_with_reasons(primed) -> None:
    bench, report = primed
    # primes.ml's 8 theorems are met again in user.ml, which loads it.
    assert report.summary() == (
        f"9 problems (generic 9) from 2 sources; 0 dropped; 8 merged (8: {MET_AGAIN})"
    )
    assert all(m.reason == MET_AGAIN for m in report.merged)
    problems = json.loads((bench / "problems.json").read_text())
    assert [f for f, _ in problems["pr.primes.ADD_0'"]["inlined_locations"]] == [
        "ml_files/pr/primes.ml",
        "ml_files/pr/user.ml",
    ]
    built = info(bench)
    assert built["met_again"] == 8 and built["merged"] == [] and built["dropped"] == []
    assert built["same_goal"] == [
        {"problem_id": "pr.primes.ADD_0'", "same_goal_as": "pr.primes.ADD_0"}
    ]


def test_primed_ids_read_back_and_check(primed, hol_base: WarmProcess, tmp_path: Path) -> None:
    bench, _ = primed
    loaded = load_benchmark(bench)  # the official layout: problems.json
    assert {p.id: p.statement for p in loaded.problems} == IDS
    assert all(p.reference for p in loaded.problems)
    # The same <id>/ directories, read without problems.json.
    plain = tmp_path / "plain"
    plain.mkdir()
    for pid in IDS:
        shutil.copytree(bench / pid, plain / pid)
    problems, _ = s2n_layout.load(plain, "plain")
    assert {p.id: p.statement for p in problems} == IDS

    opts = CheckOptions(
        problems=bench,
        out=tmp_path / "run",
        reference=True,
        official_csv=tmp_path / "official.csv",
        settings=CheckSettings(workers=2),
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert {r.problem_id: r.verdict for r in rows} == dict.fromkeys(IDS, Verdict.OK)
    with (tmp_path / "run/results.csv").open() as f:
        assert {r["problem_id"] for r in csv.DictReader(f)} == set(IDS)
    with (tmp_path / "official.csv").open() as f:
        assert set(IDS) <= {r[0] for r in csv.reader(f)}


def test_merge_same_goal_merges_as_collect_problems_does(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    sources = write_sources(tmp_path / "dev")
    opts = BuildOptions(sources, tmp_path / "b", tmp_path / "dev", merge_same_goal=True)
    report = build(opts, hol_base)
    assert [p.id for p in report.problems] == [i for i in IDS if i != "pr.primes.ADD_0'"]
    assert report.summary() == (
        f"8 problems (generic 8) from 2 sources; 0 dropped; "
        f"9 merged (8: {MET_AGAIN}; 1: {SAME_GOAL})"
    )
    (merged,) = info(tmp_path / "b")["merged"]
    assert merged["name"] == "ADD_0'" and merged["into"] == "pr.primes.ADD_0"
    assert merged["reason"] == SAME_GOAL and merged["line"] == 4
    problems = json.loads((tmp_path / "b/problems.json").read_text())
    assert len(problems["pr.primes.ADD_0"]["inlined_locations"]) == 4  # 2 theorems x 2 sources
    assert not (tmp_path / "b" / "pr.primes.ADD_0'").exists()


def test_a_same_goal_under_a_dropped_name_is_its_own_problem(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    root = tmp_path / "dev"
    (root / "arm").mkdir(parents=True)
    text = (
        "let FOO_EQUIV = prove(`!x:num. x = x`, REWRITE_TAC[]);;\n"
        "let FOO_EQUIV' = prove(`!x:num. x = x`, GEN_TAC THEN REFL_TAC);;\n"
        "let FOO' = prove(`!x:num. x = x`, REWRITE_TAC[]);;\n"
        'let BAR = prove(parse_term "T", REWRITE_TAC[]);;\n'
    )
    (root / "arm/foo.ml").write_text(text)
    report = build(BuildOptions((root / "arm/foo.ml",), tmp_path / "b", root), hol_base)
    assert [p.id for p in report.problems] == ["arm.foo.FOO'"]
    assert [p.id for p in report.dropped] == [
        "arm.foo.FOO_EQUIV",
        "arm.foo.FOO_EQUIV'",
        "arm.foo.BAR",
    ]
    assert report.summary() == (
        "1 problem (generic 1) from 1 source; 3 dropped (2: not a proof related to "
        "functional correctness; 1: the goal is evaluated at runtime); 0 merged"
    )


def test_debian_cantor_keeps_its_primed_variant(hol_base: WarmProcess, tmp_path: Path) -> None:
    source = DEBIAN_HOL_LIGHT / "100/cantor.ml"
    report = build(BuildOptions((source,), tmp_path / "b", DEBIAN_HOL_LIGHT), hol_base)
    ids = [p.id for p in report.problems]
    assert len(ids) == 10 and "100.cantor.CANTOR_THM_INJ'" in ids
    assert "100.cantor.CANTOR.0" in ids and "100.cantor.CANTOR.1" in ids
    (same,) = report.same_goal()
    assert (same.id, same.same_goal_as.id) == (
        "100.cantor.CANTOR_THM_INJ'",
        "100.cantor.CANTOR_THM_INJ",
    )


def test_build_command_prints_the_counts_and_the_repeated_goals(
    hol_base: WarmProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [str(s) for s in write_sources(tmp_path / "dev")]
    argv = ["build", "hol-light", *sources, "--out", str(tmp_path / "b")]
    p = argparse.ArgumentParser()
    build_command.configure(p.add_subparsers())
    args = p.parse_args([*argv, "--root", str(tmp_path / "dev")])
    assert args.handler(args, base=hol_base) == 0
    err = capsys.readouterr().err
    assert "9 problems (generic 9) from 2 sources; 0 dropped; 8 merged (8: the same" in err
    assert "1 kept problem states the goal of an earlier one" in err
    assert "pr.primes.ADD_0' (as pr.primes.ADD_0)" in err


def test_ids_that_name_one_directory_are_refused(hol_base: WarmProcess, tmp_path: Path) -> None:
    """As on a file system that does not tell two ids apart (case-insensitive: foo, FOO)."""
    sources = write_sources(tmp_path / "dev")
    builder = Builder(BuildOptions(sources[:1], tmp_path / "b", tmp_path / "dev"), hol_base)
    report = builder.run()
    report.problems[1].id = report.problems[0].id
    with pytest.raises(InputError, match="name the same directory"):
        write_benchmark(builder, report, tmp_path / "b")
    assert not (tmp_path / "b").exists()
