"""pass@k and friends against hand-computed values and brute force; the JSON, CSV and terminal
forms of a report, and `proofeval report`, on real SQLite run stores."""

from __future__ import annotations

import argparse
import csv
import json
import math
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest

from proofeval.commands import report as report_command
from proofeval.errors import InputError
from proofeval.metrics import (
    ProblemScore,
    compute,
    generation_stats,
    mean_pass_at_k,
    pass_at_1,
    pass_at_k,
    report_ks,
)
from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict
from proofeval.report.category_csv import category_records
from proofeval.report.json_report import comparison_document, run_document
from proofeval.report.run_data import load_run
from proofeval.report.terminal import format_comparison, format_run
from proofeval.store import RunStore

OK, FAIL, TO, ERR, CHEAT = (
    Verdict.OK,
    Verdict.FAIL,
    Verdict.TIMEOUT,
    Verdict.ERROR,
    Verdict.CHEATING,
)

# The hand-computed run, used throughout:
#   a (cat x): OK FAIL OK TIMEOUT      n=4 c=2
#   b (cat x): FAIL FAIL FAIL ERROR    n=4 c=0
#   c (cat y): OK CHEATING - -         n=2 c=1 (two attempts unchecked)
#   d (cat y): no attempt              unsolved: rate 0, pass@k 0
#   e (cat y): - -                     unsolved (no checked attempt): rate 0, pass@k 0
# smallest positive n = 2, so k = 1, 2. Every problem counts; d and e as unsolved.
# pass@1: rates 1/2, 0, 1/2, 0, 0 -> mean 1/5; deviations 3/10, -1/5, 3/10, -1/5, -1/5,
#   squares sum 3/10, sample variance 3/40, standard error sqrt(3/40 / 5) = sqrt(3/200).
# pass@2: a = 1 - C(2,2)/C(4,2) = 5/6; b = 0; c = 1 (n - c = 1 < k); d = e = 0 -> 11/30.
# category x: pass@1 (1/2 + 0)/2 = 1/4, SE sqrt(((1/4)^2 * 2 / 1) / 2) = 1/4; pass@2 5/12.
# category y: rates 1/2, 0, 0: pass@1 1/6, deviations 1/3, -1/6, -1/6, squares sum 1/6,
#   variance 1/12, SE sqrt(1/12 / 3) = 1/6; pass@2 (1 + 0 + 0)/3 = 1/3.
# OK/Tot: OK over attempts, d counting as one attempt: 3/15 overall, 1/7 in y.
RUN = {
    "a": ("x", [OK, FAIL, OK, TO]),
    "b": ("x", [FAIL, FAIL, FAIL, ERR]),
    "c": ("y", [OK, CHEAT, None, None]),
    "d": ("y", []),
    "e": ("y", [None, None]),
}


def build_store(run_dir: Path, run: dict = RUN, generations: bool = True) -> Path:
    """A real run store with these problems, attempts, verdicts (None: unchecked)."""
    store = RunStore(run_dir)
    try:
        store.add_problems(
            Problem(pid, f"`statement of {pid}`", category=cat) for pid, (cat, _) in run.items()
        )
        for pid, (_, verdicts) in run.items():
            for i, verdict in enumerate(verdicts):
                proof = f"TAC_{pid}_{i}"
                attempt = Attempt(pid, i, f"Here:\n```\n{proof}\n```", proof)
                store.add_attempts([attempt])
                if verdict is not None:
                    stage = Stage.PRECHECK if verdict is CHEAT else Stage.CHECK
                    store.record(attempt, Outcome(verdict, stage, 0.5, f"{verdict.value} here"))
                if generations:
                    gen = Generation(pid, i, f"Prove {pid}", attempt.output, "m", 100, 10 * i, 2.0)
                    store.record_generation(gen)
    finally:
        store.close()
    return run_dir


def brute_force(n: int, c: int, k: int) -> Fraction:
    """The share of k-subsets of n attempts (the first c OK) with at least one OK."""
    subsets = list(combinations(range(n), k))
    return Fraction(sum(any(i < c for i in s) for s in subsets), len(subsets))


def test_pass_at_k_by_hand():
    assert pass_at_k(8, 2, 4) == pytest.approx(1 - 15 / 70)  # C(6,4) = 15, C(8,4) = 70
    assert pass_at_k(5, 1, 2) == pytest.approx(1 - 6 / 10)  # C(4,2) = 6, C(5,2) = 10
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(4, 0, 4) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(3, 1, 3) == 1.0  # fewer than k failures: every k-subset has the OK one


def test_pass_at_k_equals_brute_force_over_all_subsets():
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(brute_force(n, c, k)), abs=1e-12)


def test_pass_at_k_is_stable_for_large_n():
    exact = 1 - Fraction(math.comb(1993, 1000), math.comb(2000, 1000))
    assert pass_at_k(2000, 7, 1000) == pytest.approx(float(exact), rel=1e-12)
    assert pass_at_k(10000, 1, 1) == pytest.approx(1e-4, rel=1e-12)
    assert pass_at_k(100000, 50000, 99999) == 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(4, 1, 0), (4, 1, 5), (4, 5, 1), (4, -1, 1)])
def test_pass_at_k_rejects_impossible_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_reported_ks():
    assert report_ks([8, 8]) == (1, 2, 4, 8)
    assert report_ks([12, 10]) == (1, 2, 4, 8, 10)
    assert report_ks([0, 3, 5]) == (1, 2, 3)
    assert report_ks([1]) == (1,)
    assert report_ks([0]) == ()
    assert report_ks([]) == ()


def score(pid: str, n: int, c: int) -> ProblemScore:
    return ProblemScore(pid, "x", n, {OK: c, FAIL: n - c})


def test_pass_at_1_standard_error_of_the_mean_over_problems():
    est = pass_at_1([score("a", 4, 2), score("b", 4, 0), score("c", 2, 1)])
    assert est.mean == pytest.approx(1 / 3)
    assert est.stderr == pytest.approx(1 / 6)
    assert est.problems == 3
    assert pass_at_1([score("a", 4, 1)]).stderr is None
    unchecked = pass_at_1([ProblemScore("a", "x", 3)])  # attempts, none checked: unsolved
    assert (unchecked.mean, unchecked.problems) == (0.0, 1)
    assert pass_at_1([]) is None
    # a problem with no checked attempt lowers the mean; it is never left out
    assert mean_pass_at_k([score("a", 4, 4), ProblemScore("b", "x")], 1) == 0.5
    assert mean_pass_at_k([score("a", 4, 2), score("b", 4, 0)], 2) == pytest.approx(5 / 12)


def test_compute_on_a_real_store(tmp_path: Path):
    m = load_run(build_store(tmp_path / "run")).metrics

    assert m.ks == (1, 2)
    assert m.unevaluated == ("d", "e")
    assert m.overall.pass_at_k == pytest.approx({1: 1 / 5, 2: 11 / 30})
    est = m.overall.pass_at_1
    assert (est.mean, est.stderr, est.problems) == pytest.approx((1 / 5, math.sqrt(3 / 200), 5))
    assert m.overall.verdicts == {OK: 3, FAIL: 4, TO: 1, ERR: 1, CHEAT: 1}
    assert (m.overall.problems, m.overall.evaluated) == (5, 3)
    assert (m.overall.attempts, m.overall.checked, m.overall.unchecked) == (14, 10, 4)
    assert m.overall.ok_share == pytest.approx(3 / 15)  # d counts as one attempt, not OK
    assert m.overall.unattempted == 1
    assert m.overall.timeout_share == pytest.approx(1 / 10)

    x, y = m.categories["x"], m.categories["y"]
    assert x.pass_at_k == pytest.approx({1: 1 / 4, 2: 5 / 12})
    assert x.pass_at_1.stderr == pytest.approx(1 / 4)
    assert y.pass_at_k == pytest.approx({1: 1 / 6, 2: 1 / 3})
    assert y.pass_at_1.stderr == pytest.approx(1 / 6)
    assert y.ok_share == pytest.approx(1 / 7)
    assert (y.problems, y.evaluated, y.attempts, y.checked) == (3, 1, 6, 2)

    # one completion per attempt: 14 x 100 prompt tokens, 10 x index completion tokens
    gen = m.generation
    assert (gen.completions, gen.models) == (14, ("m",))
    assert gen.total_tokens == 14 * 100 + 3 * (0 + 10 + 20 + 30) + (0 + 10)


def test_generation_stats_by_hand():
    gens = [
        Generation("a", 0, "p", "o", "m2", 100, 50, 2.0),
        Generation("a", 1, "p", "o", "m1", 300, 150, 4.0),
        Generation("b", 0, "p", "o", "m1", 200, 100, 3.0),
    ]
    stats = generation_stats(gens)
    assert stats.models == ("m1", "m2")
    assert (stats.mean_prompt_tokens, stats.mean_completion_tokens) == (200, 100)
    assert stats.mean_seconds == pytest.approx(3.0)
    assert stats.total_tokens == 900
    assert generation_stats([]) is None


def test_a_run_with_nothing_checked():
    m = compute([], [Problem("p", "`T`")])
    assert (m.ks, m.unevaluated, m.overall.pass_at_k, m.overall.pass_at_1) == ((), ("p",), {}, None)
    assert m.overall.ok_share == 0.0 and m.overall.timeout_share is None


def test_json_document(tmp_path: Path):
    doc = run_document(load_run(build_store(tmp_path / "run")))
    assert json.loads(json.dumps(doc)) == doc
    assert doc["format"] == "proofeval-report/1"
    assert doc["pass_at_k"] == pytest.approx({"1": 1 / 5, "2": 11 / 30})
    assert doc["pass_at_1"] == pytest.approx(
        {"mean": 1 / 5, "stderr": math.sqrt(3 / 200), "problems": 5}
    )
    assert doc["verdicts"] == {"OK": 3, "FAIL": 4, "CHEATING": 1, "TIMEOUT": 1, "ERROR": 1}
    assert doc["timeout_share"] == pytest.approx(0.1)
    assert (doc["problems"], doc["attempts"], doc["ks"]) == (5, 14, [1, 2])
    assert doc["unevaluated_problems"] == ["d", "e"]
    assert doc["problems_without_attempt"] == 1
    assert doc["categories"]["y"]["pass_at_1"] == pytest.approx(
        {"mean": 1 / 6, "stderr": 1 / 6, "problems": 3}
    )
    assert doc["categories"]["x"]["verdicts"]["FAIL"] == 4
    assert doc["generation"]["completions"] == 14


def test_comparison_json_and_text(tmp_path: Path):
    a = load_run(build_store(tmp_path / "a"))
    better = {**RUN, "b": ("x", [FAIL, OK, FAIL, ERR])}  # b: c=1, so pass@1 of b is 1/4
    b = load_run(build_store(tmp_path / "b", better, generations=False))

    doc = comparison_document(a, b)
    assert set(doc["runs"]) == {"A", "B"}
    assert doc["runs"]["B"]["generation"] is None
    diff = doc["difference"]
    assert diff["pass_at_k"]["1"] == pytest.approx(1 / 20)  # (1/2 + 1/4 + 1/2)/5 - 1/5
    assert diff["categories"]["x"]["pass_at_k"]["1"] == pytest.approx(1 / 8)
    assert diff["categories"]["y"]["pass_at_k"]["1"] == pytest.approx(0)

    lines = format_comparison(a, b).splitlines()
    assert lines[:2] == [f"A: {tmp_path / 'a'}", f"B: {tmp_path / 'b'}"]
    header = lines[3].split()
    assert header[:7] == ["Category", "A", "OK/Tot", "B", "OK/Tot", "B-A", "A"]
    x_row = next(line for line in lines if line.startswith("x "))
    # OK/Tot 2/8 -> 3/8; pass@1 25.0% -> 37.5%; pass@2 (5/6 + 0)/2 -> (5/6 + 1/2)/2
    assert x_row.split() == ["x", *"25.0% 37.5% +12.5 25.0% 37.5% +12.5 41.7% 66.7% +25.0".split()]


def test_terminal_table_has_pass_at_k_columns(tmp_path: Path):
    text = format_run(load_run(build_store(tmp_path / "run")))
    lines = text.splitlines()
    assert lines[0].split() == [
        *"Category Problems Attempts Eval OK FAIL TO/ERR CHEATING OK/Tot".split(),
        "pass@1",
        "pass@2",
    ]
    assert lines[2].split() == "x 2 8 8 2 4 2 0 25.0% 25.0% 41.7%".split()
    assert lines[3].split() == "y 3 6 2 1 0 0 1 14.3% 16.7% 33.3%".split()
    assert lines[5].split() == "Total 5 14 10 3 4 2 1 20.0% 20.0% 36.7%".split()
    assert "pass@1 20.0% ± 12.2% (standard error): avg of 0-4 samples over 5 problems" in text
    assert (
        "unsolved, never checked: 2 problems with no checked attempt (d, e), 1 of them with "
        "no attempt at all; counted as failures in every rate"
    ) in text
    assert "unchecked attempts: 4" in text


def test_category_csv_rows(tmp_path: Path):
    run = load_run(build_store(tmp_path / "run"))
    header, x, y, total = category_records([run])
    assert header[-4:] == ("pass@1_mean", "pass@1_stderr", "pass@1", "pass@2")
    assert x[1:7] == ("x", "2", "2", "0", "8", "8")
    assert y[1:7] == ("y", "3", "1", "1", "6", "2")
    assert total[1] == "Total" and total[-2:] == ("0.2", "0.366667")
    assert y[header.index("pass@1_stderr")] == "0.166667"


def report(*argv: str) -> int:
    p = argparse.ArgumentParser(prog="proofeval")
    report_command.configure(p.add_subparsers())
    args = p.parse_args(["report", *argv])
    return args.handler(args)


def test_report_command_outputs(tmp_path: Path, capsys):
    run_dir = str(build_store(tmp_path / "run"))

    assert report(run_dir) == 0
    assert "pass@2" in capsys.readouterr().out

    assert report(run_dir, "--json") == 0
    assert json.loads(capsys.readouterr().out)["pass_at_k"]["2"] == pytest.approx(11 / 30)

    out = tmp_path / "out"
    args = ("--json", str(out / "r.json"), "--csv", str(out / "r.csv"), "--html", str(out / "h"))
    assert report(run_dir, run_dir, *args) == 0
    assert "B-A" in capsys.readouterr().out
    assert json.loads((out / "r.json").read_text())["format"] == "proofeval-comparison/1"
    with open(out / "r.csv", newline="") as f:
        assert len(list(csv.reader(f))) == 1 + 2 * 3
    assert (out / "h" / "index.html").read_text().startswith("<!doctype html>")
    assert sorted(p.name for p in out.rglob("*")) == ["h", "index.html", "r.csv", "r.json"]


def test_report_of_a_directory_without_a_store(tmp_path: Path):
    with pytest.raises(InputError, match="not a run directory"):
        report(str(tmp_path))
    with pytest.raises(InputError, match="no such run directory"):
        report(str(tmp_path / "missing"))
    assert not (tmp_path / "missing").exists()
