"""Raw model output: `check`, the API (`extract=True`) and the service (`"extract": true`)
extract it the same way (last fenced block, a restated statement dropped); without
extraction, a precheck error on fenced text says to extract. Real Coq, real HTTP."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from proofeval.api import Checker, problem
from proofeval.cli import main
from proofeval.model import Stage, Verdict
from proofeval.scale.service.app import ServiceConfig, create_app

pytestmark = [pytest.mark.coq, pytest.mark.service]

HEADER = "Require Import Arith Lia."
STATEMENT = "Theorem add_zero : forall n : nat, n + 0 = n."
RAW = (
    "The statement follows by linear arithmetic.\n\n"
    "```coq\nTheorem add_zero : forall n : nat, n + 0 = n.\nProof.\n  intros n. lia.\nQed.\n```\n"
)
# A restated statement that differs from the benchmark's is dropped too: the benchmark's
# statement is the one checked, so this proves nothing about n + 1.
SWAPPED = "```coq\nTheorem add_zero : forall n : nat, n + 1 = S n.\nProof. intros n. lia. Qed.\n```"


def test_the_api_extracts_raw_output_when_asked() -> None:
    p = problem("coq", STATEMENT, HEADER)
    wrong = problem("coq", "Theorem add_zero : forall n : nat, n + 0 = S n.", HEADER)
    with Checker() as checker:
        [raw] = checker.check([(p, RAW)])
        extracted, swapped = checker.check([(p, RAW), (wrong, SWAPPED)], extract=True)
    assert (raw.verdict, raw.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert raw.message.startswith("the proof still holds a ``` fence")
    assert "extract=True" in raw.message
    assert extracted.verdict is Verdict.OK
    assert swapped.verdict is not Verdict.OK  # n + 0 = S n is false: no statement swap


def test_the_service_extracts_with_extract_true() -> None:
    item = {"problem": {"prover": "coq", "statement": STATEMENT, "header": HEADER}, "proof": RAW}
    app = create_app(Checker(), ServiceConfig(provers=("coq",)))
    with TestClient(app) as client:
        plain = client.post("/check", json={"items": [item]}).json()["results"][0]
        extracted = client.post("/check", json={"items": [item], "extract": True})
        assert extracted.status_code == 200, extracted.text
        assert client.post("/check", json={"items": [item], "extract": "yes"}).status_code == 422
    assert plain["verdict"] == "ERROR" and '"extract": true' in plain["message"]
    assert extracted.json()["results"][0]["verdict"] == "OK"


def test_check_drops_a_restated_statement_as_the_api_does(tmp_path: Path, capsys) -> None:
    bench = tmp_path / "b.jsonl"
    row = {"id": "add_zero", "prover": "coq", "header": HEADER, "statement": STATEMENT}
    bench.write_text(json.dumps(row) + "\n")
    answers = tmp_path / "a.csv"
    with answers.open("w", newline="") as f:
        csv.writer(f).writerows([["problem_id", "answer"], ["add_zero", RAW]])
    run = tmp_path / "run"
    assert main(["check", str(bench), "--answers", str(answers), "--out", str(run)]) == 0
    with (run / "results.csv").open(newline="") as f:
        assert [r["verdict"] for r in csv.DictReader(f)] == ["OK"]
