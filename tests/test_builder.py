"""Building benchmarks from HOL Light developments: real Debian sources and a small
s2n-bignum-like tree, checked in the real HOL Light."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from proofeval.builders.categories import Rule
from proofeval.builders.hol_light import BuildOptions, BuildReport, build
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

SETTINGS = CheckSettings(workers=2)

# Files that ship with Debian's hol-light: two need Library/binomial.ml, so their
# contexts share it; their references take seconds in all.
DEBIAN_SOURCES = ("100/combinations.ml", "100/ballot.ml", "100/arithmetic.ml")

TREE = {
    "common/defs.ml": """
let ensures = new_definition `ensures (P:num->bool) <=> !s. P s`;;
let read = new_definition `read (c:num) (s:num) = s + c`;;
let nonoverlapping = new_definition
  `nonoverlapping (a:num,m:num) (b:num,n:num) <=> a + m <= b \\/ b + n <= a`;;
let val_def = new_definition `val (w:num) = w`;;
""",
    "common/overlap.ml": """needs "common/defs.ml";;

(* Two different goals under one name: ids get .0 and .1 *)
let NONOVERLAPPING_SIMPLE = prove
 (`!a b. nonoverlapping (a,0) (b,0)`,
  REWRITE_TAC[nonoverlapping] THEN ARITH_TAC);;

let NONOVERLAPPING_SIMPLE = prove
 (`!a. nonoverlapping (a,0) (a,0)`,
  REWRITE_TAC[nonoverlapping] THEN ARITH_TAC);;

let COMMON_CORRECT = prove
 (`ensures (\\s. s = s)`,
  REWRITE_TAC[ensures]);;
""",
    "common/words.ml": """needs "common/defs.ml";;

(* Phrases that run on without ';;', as OCaml's use_file (and HOL Light's own
   update_database.ml) allow *)
module Words_util = struct
  let twice x = x + x;;
  let thrice x = x + x + x
end
let VAL_ID = prove(`!w. val w = w`, REWRITE_TAC[val_def])
let VAL_TWICE = prove(`!w. val w + val w = w + w`, REWRITE_TAC[VAL_ID]);;
""",
    "arm/proofs/base.ml": """needs "common/overlap.ml";;
needs "common/words.ml";;
needs "lists.ml";; (* part of the HOL Light core: not inlined *)

let READ_ZERO = prove
 (`!s. read 0 s = s`,
  REWRITE_TAC[read; ADD_CLAUSES]);;
""",
    "arm/proofs/foo.ml": """needs "arm/proofs/base.ml";;

let FOO_CORRECT = prove
 (`ensures (\\s. s + 0 = s)`,
  REWRITE_TAC[ensures; ADD_CLAUSES]);;

let FOO_SUBROUTINE_CORRECT = prove
 (`ensures (\\s. 0 + s = s)`,
  REWRITE_TAC[ensures; ADD_CLAUSES]);;

let FOO_EQUIV = prove(`!x:num. x = x`, REWRITE_TAC[]);;

let FOO_TIMED = time prove
 (`!m n. m + n = n + m`,
  ARITH_TAC);;

let FOO_AFTER = prove
 (`!s. read 0 s + 0 = s`,
  REWRITE_TAC[READ_ZERO; ADD_CLAUSES]);;
""",
    "x86/proofs/base.ml": """needs "common/overlap.ml";;
needs "common/words.ml";;
""",
    "x86/proofs/bar.ml": """needs "x86/proofs/base.ml";;

let BAR_CORRECT = prove
 (`ensures (\\s. val s = s)`,
  REWRITE_TAC[ensures; VAL_ID]);;
""",
}

EXPECTED = {
    "arm.base.READ_ZERO": "program_state",
    "arm.foo.FOO_CORRECT": "functional_correctness_arm",
    "arm.foo.FOO_TIMED": "generic",
    "arm.foo.FOO_AFTER": "program_state",
    "common.overlap.NONOVERLAPPING_SIMPLE.0": "program_state",
    "common.overlap.NONOVERLAPPING_SIMPLE.1": "program_state",
    "common.overlap.COMMON_CORRECT": "generic",
    "common.words.VAL_ID": "bit_vector",
    "common.words.VAL_TWICE": "bit_vector",
    "x86.bar.BAR_CORRECT": "functional_correctness_x86",
}


def write_tree(root: Path) -> Path:
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.lstrip("\n"))
    return root


@pytest.fixture(scope="module")
def synthetic(hol_base: WarmProcess, tmp_path_factory) -> tuple[Path, BuildReport]:
    top = tmp_path_factory.mktemp("s2n")
    root = write_tree(top / "s2n-bignum")
    sources = (root / "arm/proofs/foo.ml", root / "x86/proofs/bar.ml")
    report = build(BuildOptions(sources, top / "bench", root), hol_base)
    return top / "bench", report


@pytest.fixture(scope="module")
def debian(hol_base: WarmProcess, tmp_path_factory) -> tuple[Path, BuildReport]:
    out = tmp_path_factory.mktemp("debian") / "bench"
    sources = tuple(DEBIAN_HOL_LIGHT / s for s in DEBIAN_SOURCES)
    return out, build(BuildOptions(sources, out, DEBIAN_HOL_LIGHT), hol_base)


def cheat_answers(bench: Path, path: Path) -> Path:
    ids = json.loads((bench / "problems.json").read_text())
    path.write_text(
        "".join(json.dumps({"problem_id": i, "answer": "CHEAT_TAC"}) + "\n" for i in ids)
    )
    return path


def verdicts(bench: Path, run: Path, hol_base: WarmProcess, **answers) -> Counter:
    opts = CheckOptions(problems=bench, out=run, settings=SETTINGS, **answers)
    rows = run_check(opts, warm={"hol-light": hol_base})
    failures = [r for r in rows if r.verdict != rows[0].verdict]
    assert not failures, failures[:3]
    return Counter(r.verdict for r in rows)


def test_synthetic_tree_has_the_official_ids_and_categories(synthetic) -> None:
    bench, report = synthetic
    problems = json.loads((bench / "problems.json").read_text())
    assert {pid: p["category"] for pid, p in problems.items()} == EXPECTED
    dropped = {d["problem_id"]: d["reason"] for d in report_info(bench)["dropped"]}
    assert set(dropped) == {"arm.foo.FOO_SUBROUTINE_CORRECT", "arm.foo.FOO_EQUIV"}
    overlap = problems["common.overlap.NONOVERLAPPING_SIMPLE.1"]
    assert overlap["query"] == "`!a. nonoverlapping (a,0) (a,0)`"
    assert overlap["legacy_id"] == "common.overlap.8.NONOVERLAPPING_SIMPLE"
    assert overlap["json"]["filename"].endswith("/common/overlap.ml")
    assert overlap["json"]["goal_linenum_start"] == "9"
    # A common theorem is met in both architectures' sources.
    assert [f for f, _ in overlap["inlined_locations"]] == [
        "ml_files/arm/foo.ml",
        "ml_files/x86/bar.ml",
    ]
    assert [f for f, _ in problems["arm.foo.FOO_CORRECT"]["inlined_locations"]] == [
        "ml_files/arm/foo.ml"
    ]
    # Phrases without ';;' are split where OCaml's use_file splits them.
    assert problems["common.words.VAL_ID"]["query"] == "`!w. val w = w`"
    assert problems["common.words.VAL_TWICE"]["query"] == "`!w. val w + val w = w + w`"


def report_info(bench: Path) -> dict:
    return json.loads((bench / "proofeval-build.json").read_text())


def test_layout_matches_the_official_one(synthetic) -> None:
    bench, _ = synthetic
    problems = json.loads((bench / "problems.json").read_text())
    for pid, p in problems.items():
        ml_file, lines = p["inlined_locations"][0]
        setup = (bench / pid / "setup.ml").read_text()
        # retrieve-problem.py's setup.ml: the first n lines of the inlined file.
        assert setup == "".join((bench / ml_file).read_text().splitlines(True)[:lines])
        assert (bench / pid / "query.txt").read_text().strip() == p["query"]
        assert (bench / pid / "category.txt").read_text().strip() == p["category"]
        assert "needs" not in setup.replace('(* needs "', "")  # every load is inlined
    foo = (bench / "ml_files/arm/foo.ml").read_text()
    assert "REWRITE_TAC" not in foo and foo.count("CHEAT_TAC") == 11
    assert '(* needs "lists.ml": already loaded *)' in foo
    refs = [json.loads(line) for line in (bench / "references.jsonl").read_text().splitlines()]
    assert {r["problem_id"] for r in refs} == set(EXPECTED)
    assert {r["answer"] for r in refs} >= {
        "ARITH_TAC",
        "REWRITE_TAC[val_def]",
        "REWRITE_TAC[VAL_ID]",
    }


def test_contexts_of_one_source_are_prefixes_of_one_another(synthetic) -> None:
    bench, _ = synthetic
    by_file: dict[str, list[tuple[int, str]]] = {}
    for pid, p in json.loads((bench / "problems.json").read_text()).items():
        ml_file, lines = p["inlined_locations"][0]
        by_file.setdefault(ml_file, []).append((lines, (bench / pid / "setup.ml").read_text()))
    for members in by_file.values():
        setups = [s for _, s in sorted(members)]
        assert all(b.startswith(a) for a, b in zip(setups, setups[1:], strict=False))


def test_synthetic_references_pass_and_cheats_are_caught(
    synthetic, hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench, _ = synthetic
    loaded = load_benchmark(bench)
    assert {p.id for p in loaded.problems} == set(EXPECTED)
    assert all(p.reference and p.directory.endswith("s2n-bignum") for p in loaded.problems)
    assert verdicts(bench, tmp_path / "ref", hol_base, reference=True) == {
        Verdict.OK: len(EXPECTED)
    }
    cheats = cheat_answers(bench, tmp_path / "cheat.jsonl")
    assert verdicts(bench, tmp_path / "cheat", hol_base, answers=cheats) == {
        Verdict.CHEATING: len(EXPECTED)
    }


def test_debian_sources_references_pass_and_cheats_are_caught(
    debian, hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench, report = debian
    ids = [p.id for p in report.problems]
    assert len(ids) == len(set(ids)) > 40
    assert {i.split(".")[0] for i in ids} == {"Library", "100"}
    assert "Library.binomial.BINOM_REFL" in ids and "100.arithmetic.ARITHMETIC_PROGRESSION" in ids
    n = len(ids)
    refs = bench / "references.jsonl"
    assert verdicts(bench, tmp_path / "ref", hol_base, answers=refs) == {Verdict.OK: n}
    cheats = cheat_answers(bench, tmp_path / "cheat.jsonl")
    assert verdicts(bench, tmp_path / "cheat", hol_base, answers=cheats) == {Verdict.CHEATING: n}


def test_user_rules_replace_the_official_ones(hol_base: WarmProcess, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "s2n-bignum")
    rules = (Rule(drop="no arm", groups=("arm",)), Rule("everything"))
    opts = BuildOptions((root / "arm/proofs/foo.ml",), tmp_path / "b", root, rules=rules)
    report = build(opts, hol_base)
    assert {p.id: p.category for p in report.problems} == {
        "common.overlap.NONOVERLAPPING_SIMPLE.0": "everything",
        "common.overlap.NONOVERLAPPING_SIMPLE.1": "everything",
        "common.overlap.COMMON_CORRECT": "everything",
        "common.words.VAL_ID": "everything",
        "common.words.VAL_TWICE": "everything",
    }


def test_missing_load_names_the_file_and_line(hol_base: WarmProcess, tmp_path: Path) -> None:
    root = tmp_path / "dev"
    (root / "a").mkdir(parents=True)
    (root / "a/x.ml").write_text('let A = prove(`T`, REWRITE_TAC[]);;\n\nneeds "a/nowhere.ml";;\n')
    with pytest.raises(InputError, match=r"x\.ml:3: needs \"a/nowhere.ml\": no such file") as e:
        build(BuildOptions((root / "a/x.ml",), tmp_path / "b", root), hol_base)
    assert "may be too old for these sources: pass --hol-light DIR" in str(e.value)


def test_a_syntax_error_names_the_file_and_line(hol_base: WarmProcess, tmp_path: Path) -> None:
    root = tmp_path / "dev"
    (root / "a").mkdir(parents=True)
    text = "let A = prove(`T`, REWRITE_TAC[]);;\n\n(* c *)\nlet B = prove(`T`,, ALL_TAC);;\n"
    (root / "a/x.ml").write_text(text)
    with pytest.raises(InputError) as caught:
        build(BuildOptions((root / "a/x.ml",), tmp_path / "b", root), hol_base)
    message = str(caught.value)
    assert message.startswith(f"{root / 'a/x.ml'}:4: ")
    assert "boot.ml" not in message and "\n" not in message


def test_a_directory_that_is_not_a_build_is_not_replaced(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    root = write_tree(tmp_path / "s2n-bignum")
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not replacing"):
        build(BuildOptions((root / "x86/proofs/bar.ml",), tmp_path / "precious", root), hol_base)
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"


def test_a_prelude_is_loaded_before_each_source(hol_base: WarmProcess, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "s2n-bignum")
    (root / "x86/proofs/baz.ml").write_text("let BAZ = prove(`val 1 = 1`, REWRITE_TAC[VAL_ID]);;\n")
    opts = BuildOptions(
        (root / "x86/proofs/baz.ml",), tmp_path / "b", root, preludes=("{group}/proofs/base.ml",)
    )
    report = build(opts, hol_base)
    assert "x86.baz.BAZ" in {p.id for p in report.problems}
    text = (tmp_path / "b/ml_files/x86/baz.ml").read_text()
    assert text.startswith("(* prelude x86/proofs/base.ml: inlined before x86/proofs/baz.ml *)")
    assert str(tmp_path) not in text  # contexts do not depend on the checkout's place
