"""`proofeval validate` on real Coq (and HOL Light): statements that elaborate, those that
do not grouped by cause, reference proofs, JSON, resuming, the ids file for --only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.validate import VALID_LIST, ValidateOptions, validate

pytestmark = pytest.mark.coq

FILES = {
    "putnam_2001_a1.v": "Require Import Arith Lia.\n"
    "Theorem putnam_2001_a1 : forall n : nat, n + 0 = n.\nProof. Admitted.\n",
    # the file's theorem named otherwise, as PutnamBench's putnam_1968_a1.v
    "putnam_1968_a1.v": "Require Import Arith.\n"
    "Theorem putnam_1968_b1 : 1 + 1 = 2.\nProof. Admitted.\n",
    "putnam_1963_a4.v": "Require Import Arith.\n"
    "Theorem putnam_1963_a4 : limn_sup 0 = 0.\nProof. Admitted.\n",
    "putnam_1963_b6.v": "From GeoCoq Require Import Main.Tarski_dev.Ch16_coordinates.\n"
    "Theorem putnam_1963_b6 : True.\nProof. Admitted.\n",
    "putnam_2021_a4.v": "Definition broken : nat := true.\n"
    "Theorem putnam_2021_a4 : True.\nProof. Admitted.\n",
}


def status_count(table: str, status: str) -> int:
    """The Statements cell of a status in the table `validate` prints."""
    for line in table.splitlines():
        if line.startswith(status + "  "):
            return int(line[len(status) :].split()[0])
    raise AssertionError(f"no {status} row in:\n{table}")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "coq" / "src"
    src.mkdir(parents=True)
    for name, text in FILES.items():
        (src / name).write_text(text)
    return tmp_path / "coq"


def test_statements_are_grouped_by_cause_and_the_run_resumes(
    tree: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "v"
    assert main(["validate", str(tree), "--out", str(out), "--workers", "2"]) == 1
    text, err = capsys.readouterr()
    assert status_count(text, "elaborates") == 2
    assert "putnam_1963_b6: missing library: the header does not load" in text
    assert "putnam_1963_a4: type error in the statement: " in text and "limn_sup" in text
    assert "putnam_2021_a4: type error in the context: the header does not load" in text
    assert (out / VALID_LIST).read_text() == "putnam_1968_a1\nputnam_2001_a1\n"

    assert main(["validate", str(tree), "--out", str(out), "--json"]) == 1
    doc = json.loads(capsys.readouterr()[0])
    assert (doc["format"], doc["statements"], doc["elaborate"]) == ("proofeval-validate/1", 5, 2)
    assert doc["causes"] == {
        "missing library": ["putnam_1963_b6"],
        "type error in the statement": ["putnam_1963_a4"],
        "type error in the context": ["putnam_2021_a4"],
    }
    # the second run checked nothing again: the store had every verdict
    assert len({p["id"] for p in doc["problems"]}) == 5


def test_the_valid_ids_select_the_benchmark_for_the_next_command(tree: Path, tmp_path: Path):
    out = tmp_path / "v"
    validate(ValidateOptions(tree, out, settings=CheckSettings(workers=2)))
    assert main(["problems", str(tree), "--only", f"@{out / VALID_LIST}"]) == 0


def test_reference_proofs_are_checked_too(tmp_path: Path, capsys) -> None:
    header = "Require Import Arith Lia."
    rows = [
        {"id": "good", "prover": "coq", "header": header, "reference": "intros. lia.",
         "statement": "Theorem good : forall n : nat, n + 0 = n."},
        {"id": "wrong_ref", "prover": "coq", "header": header, "reference": "reflexivity.",
         "statement": "Theorem wrong_ref : forall n m : nat, n + m = m + n."},
        {"id": "cheat_ref", "prover": "coq", "header": header, "reference": "Admitted.",
         "statement": "Theorem cheat_ref : True."},
    ]  # fmt: skip
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v"
    assert main(["validate", str(bench), "--reference", "--out", str(out)]) == 1
    text = capsys.readouterr()[0]
    assert status_count(text, "elaborates") == 3
    assert "reference proofs: 1 of 3 OK" in text
    assert "wrong_ref: reference FAIL" in text and "cheat_ref: reference CHEATING" in text


def test_a_hol_light_goal_that_does_not_type_check(
    tmp_path: Path, hol_base: WarmProcess, capsys
) -> None:
    rows = [
        {"id": "fine", "statement": "`!n. n + 0 = n`"},
        {"id": "ill_typed", "statement": "`!n. n + T = n`"},
    ]
    bench = tmp_path / "h.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    health = validate(
        ValidateOptions(bench, tmp_path / "v", settings=CheckSettings(workers=1)),
        warm={"hol-light": hol_base},
    )
    assert [(h.problem_id, h.status) for h in health] == [
        ("fine", "ok"),
        ("ill_typed", "type error in the statement"),
    ]
