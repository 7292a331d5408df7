"""The embedded demo benchmark: every sample answer gets the verdict it was written for."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from proofeval.commands.demo import demo_file
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.table import category_table, format_table
from proofeval.runs.check import CheckOptions, run_check
from tests.conftest import on_both_paths

hol_base, core = on_both_paths()  # the demo's verdicts are the same on both paths


def test_the_demo_exercises_every_verdict_of_both_provers(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    """HOL Light and Coq problems in one file, checked in one run into one table."""
    problems = [json.loads(line) for line in demo_file("problems.jsonl").read_text().splitlines()]
    assert len(problems) >= 40 and {p["prover"] for p in problems} == {"hol-light", "coq"}
    opts = CheckOptions(
        problems=demo_file("problems.jsonl"),
        answers=demo_file("answers.jsonl"),
        out=tmp_path / "run",
        settings=CheckSettings(workers=2),
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert all(r.verdict is not None for r in rows)
    counts = Counter(r.verdict.value for r in rows if r.verdict is not None)
    assert counts == {"OK": 61, "FAIL": 8, "CHEATING": 6, "TIMEOUT": 2, "ERROR": 5}
    by_prover = Counter((r.problem_id.startswith("coq-"), r.verdict.value) for r in rows)
    assert {v for (coq, v) in by_prover if coq} == {"OK", "FAIL", "CHEATING", "TIMEOUT", "ERROR"}
    table = format_table(category_table(rows))
    assert "Total" in table and "coq-logic" in table and "arithmetic" in table


def test_every_demo_reference_proves_its_statement(hol_base: WarmProcess, tmp_path: Path) -> None:
    lines = demo_file("problems.jsonl").read_text().splitlines()
    references = tmp_path / "references.jsonl"
    references.write_text(
        "".join(
            json.dumps({"problem_id": p["id"], "answer": p["reference"]}) + "\n"
            for p in map(json.loads, lines)
        )
    )
    opts = CheckOptions(
        problems=demo_file("problems.jsonl"),
        answers=references,
        out=tmp_path / "run",
        settings=CheckSettings(workers=2),
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert [r.problem_id for r in rows if r.verdict != "OK"] == []
