"""Speaking s2n-bignum-bench: its problems.json builds, its timeout rule, its categories."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from proofeval.builders.categories import (
    OFFICIAL_RULES,
    categorize,
    has_keyword,
    load_rules,
    rules_json,
)
from proofeval.builders.profile import TimeoutRule
from proofeval.commands import problems as problems_command
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark, s2n_official
from proofeval.model import Problem
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.runs.check import CheckOptions, run_check
from proofeval.timeouts import load_policy
from tests.conftest import shared_data

# An inlined source with its proofs replaced by CHEAT_TAC, as collect-problems.py writes it.
ML_FILE = """let double = new_definition `double n = n + n`;;

let DOUBLE_0 = prove
 (`double 0 = 0`,
  CHEAT_TAC);;

let DOUBLE_ADD = prove
 (`!m n. double (m + n) = double m + double n`,
  CHEAT_TAC);;
"""


def official_build(root: Path) -> Path:
    """A build as the official scripts leave it: problems.json, ml_files/, objfiles/."""
    (root / "ml_files/arm").mkdir(parents=True)
    (root / "ml_files/arm/double.ml").write_text(ML_FILE)
    (root / "objfiles").mkdir()
    problems = {
        "arm.double.DOUBLE_0": {
            "json": {"theorem_name": "DOUBLE_0"},
            "category": "generic",
            "query": "`double 0 = 0`",
            "legacy_id": "arm.double.3.DOUBLE_0",
            "inlined_locations": [["ml_files/arm/double.ml", 2]],
        },
        "arm.double.DOUBLE_ADD": {
            "category": "bit_vector",
            "query": "`!m n. double (m + n) = double m + double n`",
            "inlined_locations": [["ml_files/arm/double.ml", 6]],
        },
    }
    (root / "problems.json").write_text(json.dumps(problems, indent=2))
    (root / "timeout-map.json").write_text(
        json.dumps([{"problem_id": "arm.double.DOUBLE_0", "prove_secs": 0.1, "timeout_sec": 120}])
    )
    (root / "timeouts.json").write_text(json.dumps({"generic": 7200, "bit_vector": 60}))
    (root / "arm.double.DOUBLE_0").mkdir()
    (root / "arm.double.DOUBLE_0/answer.txt").write_text("REWRITE_TAC[double; ADD_CLAUSES]\n")
    return root


def test_an_official_build_reads_as_problems(tmp_path: Path) -> None:
    root = official_build(tmp_path / "bench")
    bench = load_benchmark(root)
    by_id = {p.id: p for p in bench.problems}
    lines = ML_FILE.splitlines(True)
    assert by_id["arm.double.DOUBLE_0"] == Problem(
        id="arm.double.DOUBLE_0",
        statement="`double 0 = 0`",
        benchmark="bench",
        category="generic",
        header="".join(lines[:2]),
        directory=str((root / "objfiles").absolute()),
    )
    # Contexts of one file are prefixes of one another: loaded once, up to each problem.
    assert by_id["arm.double.DOUBLE_ADD"].header == "".join(lines[:6])
    assert by_id["arm.double.DOUBLE_ADD"].header.startswith(by_id["arm.double.DOUBLE_0"].header)
    assert [(a.problem_id, a.proof) for a in bench.answers] == [
        ("arm.double.DOUBLE_0", "REWRITE_TAC[double; ADD_CLAUSES]")
    ]
    policy = load_policy(root, None, None, 5.0)
    assert [policy.for_problem(p) for p in bench.problems] == [120.0, 60.0]


def test_setup_ml_stands_in_for_a_missing_ml_file(tmp_path: Path) -> None:
    root = official_build(tmp_path / "bench")
    (root / "ml_files/arm/double.ml").unlink()
    with pytest.raises(InputError, match="no setup.ml|double.ml, and no"):
        load_benchmark(root)
    for pid in ("arm.double.DOUBLE_0", "arm.double.DOUBLE_ADD"):
        (root / pid).mkdir(exist_ok=True)
        (root / pid / "setup.ml").write_text("(* setup *)\n")
    assert {p.header for p in load_benchmark(root).problems} == {"(* setup *)\n"}


def test_a_bad_location_is_reported(tmp_path: Path) -> None:
    root = official_build(tmp_path / "bench")
    data = json.loads((root / "problems.json").read_text())
    data["arm.double.DOUBLE_0"]["inlined_locations"] = [["ml_files/arm/double.ml", 99]]
    (root / "problems.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="has 9 lines, not 99"):
        load_benchmark(root)


def test_answers_are_checked_against_an_official_build(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    root = official_build(tmp_path / "bench")
    answers = tmp_path / "answers.csv"
    with answers.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem_id", "category", "query", "answer"])
        w.writerow(["arm.double.DOUBLE_0", "", "", "REWRITE_TAC[double; ADD_CLAUSES]"])
        w.writerow(["arm.double.DOUBLE_ADD", "", "", "REWRITE_TAC[double] THEN ARITH_TAC"])
        w.writerow(["arm.double.DOUBLE_ADD", "", "", "REWRITE_TAC[DOUBLE_0]"])
    opts = CheckOptions(problems=root, out=tmp_path / "run", answers=answers)
    rows = run_check(opts, warm={"hol-light": hol_base})
    verdicts = [(r.problem_id, r.attempt, r.verdict.value) for r in rows]
    assert sorted(verdicts) == [
        ("arm.double.DOUBLE_0", 0, "OK"),
        ("arm.double.DOUBLE_ADD", 0, "OK"),
        ("arm.double.DOUBLE_ADD", 1, "FAIL"),
    ]


def test_the_official_timeout_rule_reproduces_the_official_map() -> None:
    entries = json.loads(shared_data("s2n-bignum-bench", "timeout-map.json").read_text())
    rule = TimeoutRule()
    assert len(entries) > 2000
    assert all(rule.timeout(e["prove_secs"]) == e["timeout_sec"] for e in entries)
    assert {rule.timeout(s) for s in (0.0, 59.9)} == {120}
    assert (rule.timeout(60.0), rule.timeout(120.0), rule.timeout(121.0)) == (120, 240, 605)
    assert rule.timeout(1e6) == 10800


@pytest.mark.parametrize(
    ("name", "group", "goal", "category"),
    [
        ("BIGNUM_ADD_CORRECT", "arm", "`!p. ensures arm (\\s. T) (\\s. T) (\\s s'. T)`",
         "functional_correctness_arm"),
        ("BIGNUM_ADD_CORRECT", "x86", "`ensures x86 P Q R`", "functional_correctness_x86"),
        ("BIGNUM_ADD_CORRECT", "common", "`ensures x86 P Q R`", "generic"),
        ("READ_LEMMA", "common", "`!s. read X0 s = word 0`", "program_state"),
        ("MAYCHANGE", "arm", "`(X0 :> bytes64) s = x`", "program_state"),
        ("DISJ", "common", "`nonoverlapping_modulo n (a,b) (c,d)`", "program_state"),
        ("W", "common", "`word_add x (word 0):int64 = x`", "bit_vector"),
        ("V", "common", "`(val x):num < 2 EXP 64`", "bit_vector"),
        ("N", "common", "`!n. n + 0 = n`", "generic"),
        ("N", "common", "`!n. (n + 0 = n) /\\ overwrite`", "generic"),
        ("N", "common", "`!v. valid v`", "bit_vector"),  # the official match is a prefix
        ("BIGNUM_ADD_SUBROUTINE_CORRECT", "arm", "`ensures arm P Q R`", None),
        ("BIGNUM_ADD_EQUIV", "arm", "`x = x`", None),
    ],
)  # fmt: skip
def test_official_categories(name: str, group: str, goal: str, category: str | None) -> None:
    assert categorize(OFFICIAL_RULES, name, goal, group).category == category


def test_keywords_match_as_the_official_script_matches_them() -> None:
    assert has_keyword(("read",), "(read X0 s)")
    assert has_keyword(("word_*",), "`x = word_add a b`")
    assert not has_keyword(("word_*",), "`x = wordy`")
    assert not has_keyword(("read",), "`thread`")


def test_a_rules_file_replaces_the_table(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules_json(OFFICIAL_RULES)))
    assert load_rules(path) == OFFICIAL_RULES
    path.write_text(json.dumps([{"category": "sets", "goal_keywords": ["SUBSET"]},
                                {"category": "other"}]))  # fmt: skip
    rules = load_rules(path)
    assert categorize(rules, "X", "`s SUBSET t`", "Library").category == "sets"
    assert categorize(rules, "X", "`x = x`", "Library").category == "other"
    for bad, why in [
        ([{"category": "a", "drop": "b"}], "exactly one of category and drop"),
        ([{"category": "a", "goal": ["x"]}], "unknown fields"),
        ([{"category": "a", "groups": "arm"}], "list of non-empty strings"),
        ({}, "non-empty JSON list"),
    ]:
        path.write_text(json.dumps(bad))
        with pytest.raises(InputError, match=why):
            load_rules(path)


def problems_cli(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    problems_command.configure(p.add_subparsers())
    args = p.parse_args(["problems", *argv])
    return args.handler(args)


def test_problems_lists_and_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = official_build(tmp_path / "bench")
    assert problems_cli([str(root)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "arm.double.DOUBLE_0\tgeneric",
        "arm.double.DOUBLE_ADD\tbit_vector",
    ]
    out = tmp_path / "p.csv"
    assert problems_cli([str(root), "--category", "bit_vector", "--csv", str(out)]) == 0
    with out.open(newline="") as f:
        assert list(csv.DictReader(f)) == [
            {
                "problem_id": "arm.double.DOUBLE_ADD",
                "category": "bit_vector",
                "query": "`!m n. double (m + n) = double m + double n`",
            }
        ]
    with pytest.raises(InputError, match="no problems of category"):
        problems_cli([str(root), "--category", "nope"])


def test_official_ids_never_lead_outside_the_benchmark(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    (bench / "x.y.Z'").mkdir(parents=True)
    (bench / "x.y.Z'" / "answer.txt").write_text("ARITH_TAC\n")
    (bench / "x.y.Z'" / "setup.ml").write_text("let a = 1;;\n")
    (bench / "ml_files").mkdir()
    (bench / "ml_files/a.ml").write_text("let b = 2;;\n")
    (tmp_path / "answer.txt").write_text("outside\n")
    (tmp_path / "setup.ml").write_text("outside\n")
    problems = {
        "x.y.Z'": {"category": "generic", "query": "`T`"},  # its <id>/setup.ml
        "..": {"category": "generic", "query": "`T`", "inlined_locations": [["ml_files/a.ml", 1]]},
    }
    (bench / "problems.json").write_text(json.dumps(problems))
    loaded, answers = s2n_official.load(bench, "bench")
    assert [(p.id, p.header) for p in loaded] == [
        ("..", "let b = 2;;\n"),
        ("x.y.Z'", "let a = 1;;\n"),
    ]
    assert [(a.problem_id, a.proof.strip()) for a in answers] == [("x.y.Z'", "ARITH_TAC")]
    del problems[".."]["inlined_locations"]
    (bench / "problems.json").write_text(json.dumps(problems))
    with pytest.raises(InputError, match=r"\.\.: no inlined_locations, and the id names no dir"):
        s2n_official.load(bench, "bench")
