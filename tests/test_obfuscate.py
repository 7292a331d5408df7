"""Obfuscating queries and profiling references, in the real HOL Light."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from proofeval.builders.obfuscate import obfuscate
from proofeval.commands import build as build_command
from proofeval.commands import obfuscate as obfuscate_command
from proofeval.commands import profile as profile_command
from proofeval.model import Problem, Verdict
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

DEFS = "let twice = new_definition `twice (n:num) = 2 * n`;;\n"

# Terms whose plain printing loses something: invented types, overloaded numerals,
# symbolic constants, paired and let binders, set comprehensions, a bound variable
# that shares its name with a free one of another type.
TRICKY = [
    "`x = x`",
    "`&1 + x = (y:real)`",
    "`(&1:int) = &1`",
    "`(\\(x,y). x + y) (1,2) = 3`",
    "`let x = 1 in x + x = 2`",
    "`{x | x > 0} = {y | y > 0}`",
    "`(+) 1 = SUC`",
    "`#1.5 = &3 / &2`",
    "`(!x:num. x = x) /\\ (x:bool)`",
    "`!l:num list. LENGTH (APPEND l []) = LENGTH l`",
    "`{} SUBSET (UNIV:num->bool)`",
    "`twice 2 = 4`",
]


def cli(module, argv: list[str], base: WarmProcess) -> int:
    p = argparse.ArgumentParser()
    module.configure(p.add_subparsers())
    args = p.parse_args(argv)
    if module is profile_command:  # checks through the prover registry, for any prover
        return args.handler(args, warm={"hol-light": base})
    return args.handler(args, base=base)


def test_tricky_terms_round_trip(hol_base: WarmProcess) -> None:
    problems = [
        Problem(id=f"t{i}", statement=q, header=DEFS if "twice" in q else "")
        for i, q in enumerate(TRICKY)
    ]
    results = obfuscate(problems, hol_base)
    assert [r.reason for r in results if r.query is None] == []
    by_id = {r.problem_id: r.query for r in results}
    assert by_id["t0"] == "`(x:arbty0) = (x:arbty0)`"
    assert by_id["t2"] == "`(& :num->int)1 = (& :num->int)1`"
    assert "(twice:num->num)" in by_id["t11"]


def test_a_query_that_does_not_parse_keeps_its_text(hol_base: WarmProcess) -> None:
    code = Problem(id="code", statement="`undefined_constant_x + 1 = 2`+")
    bad = Problem(id="bad", statement="`undefined_constant_x + 1 =`")
    by_id = {r.problem_id: r for r in obfuscate([code, bad], hol_base)}
    assert by_id["code"].query is None and "one term in backquotes" in by_id["code"].reason
    assert by_id["bad"].query is None and "does not parse" in by_id["bad"].reason


def test_build_obfuscate_and_profile_a_debian_benchmark(
    hol_base: WarmProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench"
    sources = [str(DEBIAN_HOL_LIGHT / s) for s in ("100/arithmetic.ml", "Library/iter.ml")]
    argv = ["build", "hol-light", *sources, "--out", str(bench), "--root", str(DEBIAN_HOL_LIGHT)]
    assert cli(build_command, argv, hol_base) == 0
    original = json.loads((bench / "problems.json").read_text())

    assert cli(obfuscate_command, ["obfuscate", str(bench), "--in-place"], hol_base) == 0
    assert f"obfuscated {len(original)} of {len(original)} queries (100.0%)" in (
        capsys.readouterr().err
    )
    assert json.loads((bench / "problems-unobfuscated.json").read_text()) == original
    changed = json.loads((bench / "problems.json").read_text())
    lemma = "100.arithmetic.ARITHMETIC_PROGRESSION_LEMMA"
    assert "(a:num)" in changed[lemma]["query"]
    assert (bench / lemma / "query.txt").read_text().strip() == changed[lemma]["query"]

    # The references prove the obfuscated goals too.
    settings = CheckSettings(workers=2)
    opts = CheckOptions(problems=bench, out=tmp_path / "run", reference=True, settings=settings)
    assert {r.verdict for r in run_check(opts, warm={"hol-light": hol_base})} == {Verdict.OK}

    argv = ["profile", str(bench), "--runs", "2", "--workers", "2", "--short-timeout", "30"]
    assert cli(profile_command, argv, hol_base) == 0
    rows = json.loads((bench / "timeout-map.json").read_text())
    assert [r["problem_id"] for r in rows] == sorted(original)
    # the short timeout for proofs under a minute (the kernel replay makes one of these
    # take 10-30 s on a busy machine)
    assert all(0 < r["prove_secs"] and (r["timeout_sec"] == 30) == (r["prove_secs"] < 60)
               for r in rows), rows  # fmt: skip
