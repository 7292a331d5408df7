"""A reply with no proof in it is FAIL at stage `extract` on every prover (runs/no_proof.py):
the prompt asked for a code block, the reply has none, and the prover rejects its whole
text. An honest bare proof stays OK; a statement that does not elaborate keeps its ERROR;
a user's own template (which may ask for no block) keeps the prover's verdict. Real HTTP
stub server as the model, the real provers, a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.commands.repair_judge import CheckerJudge
from proofeval.generate.client import SamplingSettings
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.run_data import load_run
from proofeval.runs.repair import RepairOptions, run_with_repairs
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget
from proofeval.store import RunStore
from tests.openai_stub import StubServer

PROSE = "Hmm, I am not sure how to prove this. Perhaps by induction on n?"


def outcomes(run: Path) -> dict[tuple[str, int], tuple[str, str]]:
    return {
        (r.problem_id, r.attempt): (r.verdict.value, r.stage.value)  # type: ignore[union-attr]
        for r in load_run(run).results
    }


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.hol
def test_hol_light_prose_is_no_proof_and_a_bare_tactic_stays_ok(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench = write(tmp_path / "bench.jsonl", [
        {"id": "zero", "statement": "`!n. n + 0 = n`"},
        {"id": "bad", "statement": "`!n. n + 0 = T`"},  # does not elaborate: a type error
    ])  # fmt: skip
    custom = tmp_path / "mine.j2"
    custom.write_text("Prove {{ statement }}.\n")
    with StubServer() as server:
        server.script("`!n. n + 0 = n`", [PROSE, "ARITH_TAC", "```ocaml\nALL_TAC\n```"])
        server.script("`!n. n + 0 = T`", [PROSE])
        settings = SamplingSettings(model="stub", base_url=server.url, samples=3)
        run = tmp_path / "run"
        run_pipeline(RunOptions(bench, run, settings), warm={"hol-light": hol_base})
        by_hand = tmp_path / "own-template"
        one = SamplingSettings(model="stub", base_url=server.url, samples=1)
        opts = RunOptions(bench, by_hand, one, template=str(custom))
        server.script("`!n. n + 0 = n`", [PROSE])
        run_pipeline(opts, warm={"hol-light": hol_base})
    found = outcomes(run)
    assert found[("zero", 0)] == ("FAIL", "extract")  # prose: no proof in the reply
    assert found[("zero", 1)] == ("OK", "check")  # an honest bare tactic, no block
    assert found[("zero", 2)] == ("FAIL", "check")  # a block: the prover's verdict
    assert found[("bad", 0)] == ("ERROR", "precheck")  # the statement's fault shows
    message = {(r.problem_id, r.attempt): r.message for r in load_run(run).results}
    assert message[("zero", 0)].startswith("no proof in the reply: it has no code block")
    # A user's template may ask for no block: the prover's own verdict stands.
    assert outcomes(by_hand)[("zero", 0)] == ("ERROR", "precheck")


@pytest.mark.coq
def test_coq_prose_is_no_proof_and_a_bare_proof_stays_ok(tmp_path: Path) -> None:
    statement = "Theorem add_zero : forall n : nat, n + 0 = n."
    bench = write(tmp_path / "bench.jsonl", [
        {"id": "add_zero", "prover": "coq", "header": "Require Import Arith Lia.",
         "statement": statement},
    ])  # fmt: skip
    with StubServer() as server:
        server.script(statement, [PROSE, "intros n. lia.", "```coq\nintros n.\n```"])
        run = tmp_path / "run"
        args = ["run", str(bench), "--model", "stub", "--base-url", server.url, "--samples",
                "3", "--out", str(run), "--workers", "1"]  # fmt: skip
        assert main(args) == 0
        found = outcomes(run)
        assert found[("add_zero", 0)] == ("FAIL", "extract")
        assert found[("add_zero", 1)] == ("OK", "check")
        assert found[("add_zero", 2)] == ("FAIL", "check")
        # The built-in repair prompt asks for a block too: prose in a round is no proof.
        server.respond_with(lambda prompt: PROSE if "This was attempt 1." in prompt else None)
        assert main([*args, "--rounds", "1"]) == 0
    store = RunStore(run)
    try:
        repaired = {(r.sample, r.outcome.verdict.value, r.outcome.stage.value)  # type: ignore[union-attr]
                    for r in store.rounds()}  # fmt: skip
    finally:
        store.close()
    assert repaired == {(0, "FAIL", "extract"), (2, "FAIL", "extract")}


@pytest.mark.hol
def test_hol_light_prose_in_a_repair_round_is_no_proof(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench = write(tmp_path / "bench.jsonl", [{"id": "zero", "statement": "`!n. n + 0 = n`"}])
    warm = {"hol-light": hol_base}
    with StubServer() as server:
        server.respond_with(
            lambda prompt: PROSE if "This was attempt 1." in prompt else "```ocaml\nGEN_TAC\n```"
        )
        sampling = SamplingSettings(model="stub", base_url=server.url, backoff_base=0.01)
        opts = RunOptions(bench, tmp_path / "run", sampling)
        with (
            Checker(CheckSettings(workers=1), warm=warm) as checker,
            States(checker) as states,
            states.session(Budget()) as session,
        ):
            judge = CheckerJudge(checker, session)
            run_with_repairs(opts, RepairOptions(1, sampling), judge, warm)
    store = RunStore(tmp_path / "run")
    try:
        [repaired] = store.rounds()
    finally:
        store.close()
    assert repaired.outcome is not None
    assert (repaired.outcome.verdict.value, repaired.outcome.stage.value) == ("FAIL", "extract")
    assert "(ERROR at precheck: " in repaired.outcome.message  # HOL Light could not parse it
