"""`proofeval baseline`: a tactic portfolio run as answers, checked by real HOL Light."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proofeval.baselines import tactics
from proofeval.baselines.run import BaselineOptions, run_baseline, solve_table
from proofeval.cli import main
from proofeval.model import Attempt
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs import check as check_run
from proofeval.store import RunStore

PROBLEMS = [
    ("arith.add_0", "arith", "`!n. n + 0 = n`"),
    ("sets.inter_subset", "sets", "`!s t:A->bool. s INTER t SUBSET s`"),
    ("lists.append_nil", "lists", "`!l:A list. APPEND l [] = l`"),  # needs induction
]


def write_bench(path: Path, prover: str = "hol-light") -> Path:
    lines = [
        json.dumps({"id": pid, "prover": prover, "category": cat, "statement": goal})
        for pid, cat, goal in PROBLEMS
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_tables_have_a_row_per_prover_and_method() -> None:
    hol = tactics.portfolio("hol-light", "portfolio")
    assert [t.answer for t in hol[:2]] == ["ARITH_TAC", "INT_ARITH_TAC"]
    assert len(hol) == 14 and hol[7].answer == "REPEAT STRIP_TAC THEN ARITH_TAC"
    coq = tactics.portfolio("coq", "portfolio")
    assert [t.name for t in coq][-1] == "sauto" and coq[0].answer == "Proof. lia. Qed."
    assert [t.name for t in tactics.portfolio("coq", "hammer")] == ["hammer", "sauto"]


@pytest.mark.hol
def test_portfolio_solves_closes_and_resumes(
    tmp_path: Path, hol_base: WarmProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = BaselineOptions(
        problems=write_bench(tmp_path / "bench.jsonl"),
        out=tmp_path / "run",
        method="portfolio",
        tactic_timeout=3.0,
        settings=CheckSettings(workers=2),
    )
    solves = run_baseline(opts, warm={"hol-light": hol_base})
    closed = {s.problem_id: s.tactic for s in solves}
    assert closed == {
        "arith.add_0": "ARITH_TAC",
        "sets.inter_subset": "SET_TAC[]",
        "lists.append_nil": None,
    }
    assert all(s.checked for s in solves)
    table = solve_table(solves).splitlines()
    assert table[0].split() == ["Category", "Problems", "Solved", "Solved/Tot"]
    assert table[2].split() == ["arith", "1", "1", "100.0%"]
    assert table[3].split() == ["lists", "1", "0", "0.0%"]
    assert table[-1].split() == ["Total", "3", "2", "66.7%"]

    rows = read_csv(opts.out / "baseline.csv")
    assert [(r["problem_id"], r["category"], r["solved"], r["tactic"]) for r in rows] == [
        ("arith.add_0", "arith", "1", "ARITH_TAC"),
        ("lists.append_nil", "lists", "0", ""),
        ("sets.inter_subset", "sets", "1", "SET_TAC[]"),
    ]
    assert float(rows[0]["seconds"]) < 3 and rows[1]["seconds"] == ""

    # Every tactic is one attempt of its problem, indexed by its place in the portfolio.
    results = read_csv(opts.out / "results.csv")
    assert len(results) == 3 * 14
    verdicts = {(r["problem_id"], int(r["attempt"])): r for r in results}
    assert verdicts["arith.add_0", 0]["verdict"] == "OK"
    assert verdicts["sets.inter_subset", 4]["verdict"] == "OK"
    assert verdicts["sets.inter_subset", 0]["verdict"] == "FAIL"
    word = verdicts["arith.add_0", 6]  # WORD_BITWISE_TAC: unbound without Library/words.ml
    assert (word["verdict"], word["stage"]) == ("ERROR", "precheck")
    assert not any(r["verdict"] == "OK" for r in results if r["problem_id"] == "lists.append_nil")

    # Resume: nothing left to check, and the same files.
    def no_checking(*_args, **_kwargs):
        raise AssertionError("a resumed baseline checked something again")

    monkeypatch.setattr(check_run, "check_all", no_checking)
    before = (opts.out / "results.csv").read_text()
    assert run_baseline(opts, warm={"hol-light": hol_base}) == solves
    assert (opts.out / "results.csv").read_text() == before


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("proofeval: error: ")
    return err[0]


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = str(write_bench(tmp_path / "bench.jsonl"))
    out = str(tmp_path / "run")
    line = one_error_line(capsys, ["baseline", bench, "--method", "magic", "--out", out])
    assert "unknown baseline method 'magic'" in line and "portfolio, hammer" in line
    line = one_error_line(capsys, ["baseline", bench, "--method", "hammer", "--out", out])
    assert "HOL Light has no hammer in Debian" in line
    lean = str(write_bench(tmp_path / "lean.jsonl", prover="lean4"))
    line = one_error_line(capsys, ["baseline", lean, "--method", "portfolio", "--out", out])
    assert "no portfolio baseline for prover 'lean4'" in line
    assert not (tmp_path / "run").exists()

    # A run directory with other attempts (a model's answers) is not mixed with a baseline.
    store = RunStore(tmp_path / "model-run")
    store.add_attempts([Attempt("arith.add_0", 0, "ARITH_TAC", "REWRITE_TAC[ADD_CLAUSES]")])
    store.close()
    argv = ["baseline", bench, "--method", "portfolio", "--out", str(tmp_path / "model-run")]
    assert "holds other attempts" in one_error_line(capsys, argv)


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["baseline", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--method METHOD", "portfolio (coq", "hammer (coq", "--tactic-timeout"):
        assert words in text
    assert "baseline.csv" in text and "--workers" in text
