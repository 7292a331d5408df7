"""miniF2F's HOL Light as openai/miniF2F publishes it (../shared/data/minif2f-hollight,
read there): every file is a problem, each header states the libraries its term needs,
and statements with their headers elaborate (and are provable) in the real HOL Light."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.loaders import Selection, load_benchmark, minif2f_hollight
from proofeval.loaders.minif2f_hollight import (
    COMPLEX,
    FLOOR,
    MULTIVARIATE,
    MULTIVARIATE_TRANSC,
    TRANSC,
    needs,
)
from proofeval.model import Problem
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check
from proofeval.runs.validate import ELABORATES, ValidateOptions, validate
from tests.conftest import shared_data

DATA = "minif2f-hollight"


def problems(*parts: str) -> dict[str, Problem]:
    return {p.id: p for p in minif2f_hollight.load(shared_data(DATA, *parts), DATA)}


def header(*libraries: str) -> str:
    return "".join(f'needs "{library}";;\n' for library in libraries)


def test_every_published_file_is_one_problem() -> None:
    got = problems()
    files = sorted(shared_data(DATA).glob("*/*.ml"))
    assert len(got) == len(files) == 326
    assert Counter(p.category for p in got.values()) == {"test": 163, "valid": 163}
    for p in got.values():
        assert p.prover == "hol-light" and p.directory == ""
        assert p.statement[0] == p.statement[-1] == "`" and p.statement.count("`") == 2


def test_named_problems_keep_their_terms_and_state_their_libraries() -> None:
    got = problems()
    simple = got["mathd-numbertheory-342"]
    assert (simple.statement, simple.category, simple.header) == ("`54 MOD 6 = 0`", "test", "")
    aime = got["aime-1983-p1"]  # ln: real transcendental functions
    assert aime.statement.startswith("`!x:num y:num z:num w:num.\n    ((1 < x)")
    assert aime.statement.endswith("(ln (&w) / ln (&z) = &60)`")
    assert aime.header == header(TRANSC)
    assert got["mathd-numbertheory-84"].header == header(FLOOR)
    assert got["mathd-numbertheory-84"].category == "valid"
    # complex numbers, and floor of a real part
    assert got["amc12a-2021-p12"].header == header(TRANSC, COMPLEX, FLOOR)
    # vsum over complex numbers: Multivariate's complex (real^2), not Complex/'s
    assert got["amc12-2000-p15"].header == header(MULTIVARIATE)
    # the core has sqrt, prime, gcd, divides, (mod), nsum and product
    assert got["amc12-2000-p6"].header == got["aime-1983-p3"].header == ""


def test_a_doubled_let_as_published_is_read_as_one() -> None:
    # test/amc12-2000-p1.ml reads `let amc12-2000-p1 = let amc12-2000-p1 = `...`;;`
    text = (shared_data(DATA, "test", "amc12-2000-p1.ml")).read_text()
    assert text.count("let amc12-2000-p1 =") == 2
    assert problems("test")["amc12-2000-p1"].statement == (
        "`!i m n. ~(i = 0) /\\ ~(m = 0) /\\ ~(n = 0) /\\ (i * m * n = 2001) ==> i + m + n <= 671`"
    )


def test_every_library_a_header_names_is_in_hol_light() -> None:
    named = {line for p in problems().values() for line in p.header.splitlines()}
    assert named  # some problems need libraries beyond the core
    for line in named:
        library = line.removeprefix('needs "').removesuffix('";;')
        assert (DEBIAN_HOL_LIGHT / library).is_file(), line


def test_libraries_follow_from_the_constants_a_term_names() -> None:
    assert needs("!x. &0 <= x ==> sqrt x pow 2 = x") == []
    assert needs("!n. prime n ==> n divides nproduct (1..n) (\\i. i)") == []
    assert needs("exp (ln x) = x") == [TRANSC]
    assert needs("floor (exp x) = &0") == [TRANSC, FLOOR]
    assert needs("!z:complex. z = z") == [TRANSC, COMPLEX]
    assert needs("vsum s (\\y. y) = Cx(&0)") == [MULTIVARIATE]
    assert needs("vsum s (\\y. Cx(exp y)) = Cx(&0)") == [MULTIVARIATE_TRANSC]
    # a name that merely contains one (lnx, expand) is not it
    assert needs("!lnx expand. lnx = expand") == []


def test_one_split_directory_loads_alone_and_the_root_is_detected() -> None:
    assert {p.category for p in problems("valid").values()} == {"valid"}
    assert len(problems("valid")) == 163
    bench = load_benchmark(shared_data(DATA))
    assert (bench.name, len(bench.problems), bench.skipped) == (DATA, 326, [])


def test_problems_lists_them_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_data(DATA)
    assert main(["problems", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 326 and "mathd-numbertheory-342\ttest" in lines
    out = tmp_path / "problems.csv"
    assert main(["problems", str(root), "--only", "mathd-numbertheory-8*", "--csv", str(out)]) == 0
    with out.open(newline="") as f:
        rows = {r["problem_id"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"mathd-numbertheory-84", "mathd-numbertheory-85", "mathd-numbertheory-81"}
    assert rows["mathd-numbertheory-81"]["query"] == "`71 MOD 3 = 2`"


def test_files_that_are_not_the_published_form_are_refused(tmp_path: Path) -> None:
    split = tmp_path / "bench" / "test"
    split.mkdir(parents=True)
    (split / "a-1.ml").write_text("let a-1 = `1 + 1 = 2`;;\n")
    (split / "b-2.ml").write_text("let other = `T`;;\n")
    with pytest.raises(InputError, match="b-2.ml: the term is named other, not b-2"):
        load_benchmark(tmp_path / "bench")
    (split / "b-2.ml").write_text("let b-2 = prove(`T`, REWRITE_TAC[]);;\n")
    with pytest.raises(InputError, match="b-2.ml: not one phrase"):
        load_benchmark(tmp_path / "bench")
    # OCaml that is not a term (an s2n-style setup.ml) is not this layout
    (split / "a-1.ml").write_text("let TWICE = new_definition `TWICE n = 2 * n`;;\n")
    with pytest.raises(InputError, match="no problems in any layout"):
        load_benchmark(tmp_path / "bench")


def test_statements_elaborate_with_their_headers_and_a_proof_is_checked(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    """The real path: `validate` probes two statements (the core's, and one whose header
    loads Library/floor.ml); then a proof that uses floor.ml's FLOOR_UNIQUE is OK, which
    it can be only if the header made the statement's `floor` that library's constant
    (without it `floor` would be a free variable)."""
    root = shared_data(DATA)
    only = Selection(only=("mathd-numbertheory-342", "mathd-numbertheory-84"))
    health = validate(
        ValidateOptions(root, tmp_path / "v", only, settings=CheckSettings(workers=1)),
        warm={"hol-light": hol_base},
    )
    assert {(h.problem_id, h.status) for h in health} == {
        ("mathd-numbertheory-342", ELABORATES),
        ("mathd-numbertheory-84", ELABORATES),
    }
    answers = tmp_path / "answers.csv"
    proof = "REWRITE_TAC[GSYM FLOOR_UNIQUE; INTEGER_CLOSED] THEN CONV_TAC REAL_RAT_REDUCE_CONV"
    with answers.open("w", newline="") as f:
        csv.writer(f).writerows(
            [
                ["problem_id", "category", "query", "answer"],
                ["mathd-numbertheory-84", "", "", proof],
            ]
        )
    opts = CheckOptions(
        root, tmp_path / "run", answers, selection=only, settings=CheckSettings(workers=1)
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert [(r.problem_id, r.verdict) for r in rows] == [("mathd-numbertheory-84", "OK")]
