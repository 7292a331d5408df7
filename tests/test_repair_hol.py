"""Repair rounds and agentic runs on HOL Light, through the shared core (conftest's
hol_base): the real stub server, the real HOL Light checker and proof states, the real
store. The Coq side, the kill and the hostile calls in full: test_repair.py, test_agent.py."""

from __future__ import annotations

import json
from pathlib import Path

from proofeval.agents.toolbox import AgentToolbox
from proofeval.agents.tools import Limits
from proofeval.commands.repair_judge import CheckerJudge
from proofeval.generate.client import SamplingSettings
from proofeval.model import Problem
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.rounds import load_rounds, round_rows
from proofeval.runs.agent import AgentBudget, AgentOptions, run_agent
from proofeval.runs.repair import RepairOptions, run_with_repairs
from proofeval.runs.stream import RunOptions
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget
from proofeval.store import RunStore
from tests.openai_stub import StubServer
from tests.test_agent import calls, results

ZERO = "`!n. n + 0 = n`"
SWAP = "`!s t:A->bool. s INTER t = t INTER s`"


def fenced(tactic: str) -> str:
    return f"```ocaml\n{tactic}\n```"


def repairing(prompt: str) -> str | None:
    again = "This was attempt 1." in prompt
    if ZERO in prompt:
        return fenced("ARITH_TAC" if again else "GEN_TAC")
    if SWAP in prompt:
        return fenced("SET_TAC[]" if again else "CHEAT_TAC")
    return None


def write_bench(tmp_path: Path) -> Path:
    bench = tmp_path / "bench.jsonl"
    rows = [{"id": "zero", "statement": ZERO}, {"id": "swap", "statement": SWAP}]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return bench


def test_hol_light_repair_rounds(
    hol_base: WarmProcess, stub_server: StubServer, tmp_path: Path
) -> None:
    stub_server.respond_with(repairing)
    bench, run = write_bench(tmp_path), tmp_path / "run"
    sampling = SamplingSettings(model="stub", base_url=stub_server.url, backoff_base=0.01)
    opts = RunOptions(bench, run, sampling, settings=CheckSettings(workers=2))
    warm = {"hol-light": hol_base}
    with (
        Checker(CheckSettings(workers=2), warm=warm) as checker,
        States(checker) as states,
        states.session(Budget()) as session,
    ):
        run_with_repairs(opts, RepairOptions(2, sampling), CheckerJudge(checker, session), warm)
    store = RunStore(run)
    try:
        first = {r.problem_id: r.verdict.value for r in store.results() if r.verdict}
        repaired = {r.problem_id: (r.round, r.outcome and r.outcome.verdict.value)
                    for r in store.rounds()}  # fmt: skip
    finally:
        store.close()
    assert first == {"zero": "FAIL", "swap": "CHEATING"}
    assert repaired == {"zero": (1, "OK"), "swap": (1, "OK")}
    prompts = [json.dumps(r.body) for r in stub_server.requests]
    [zero_repair] = [p for p in prompts if "This was attempt 1." in p and "n + 0" in p]
    assert "GEN_TAC" in zero_repair and "verdict on it: FAIL" in zero_repair
    assert "The goals left unproved" in zero_repair  # HOL Light's feedback: the goal left
    assert [(r.round, r.solved) for r in round_rows(load_rounds(run))] == [(0, 0), (1, 2)]


def agent(body: dict) -> dict:
    first = body["messages"][0]["content"]
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    if ZERO in first:
        if turn == 0:
            return calls(("start_state", {}))
        state = results(body)[-1]["id"]
        if turn == 1:
            return calls(("apply_tactic", {"state_id": state, "tactic": "CHEAT_TAC"}),
                         ("apply_tactic", {"state_id": state, "tactic": "ARITH_TAC"}))  # fmt: skip
        return calls(("submit", {"state_id": results(body)[-1]["id"]}))
    if turn == 0:
        return calls(
            ("check", {"proof": "ALL_TAC"}), ("search_theorems", {"pattern": "`s INTER t`"})
        )
    return calls(("submit", {"proof": "SET_TAC[]"}))


def test_hol_light_agent(hol_base: WarmProcess, stub_server: StubServer, tmp_path: Path) -> None:
    stub_server.converse_with(agent)
    bench, run = write_bench(tmp_path), tmp_path / "run"
    sampling = SamplingSettings(model="stub", base_url=stub_server.url, backoff_base=0.01)
    limits = Limits(checks=20, timeout=60.0)
    with (
        Checker(CheckSettings(workers=2), warm={"hol-light": hol_base}) as checker,
        States(checker) as states,
    ):

        def toolbox(problem: Problem) -> AgentToolbox:
            return AgentToolbox(problem, checker, states.session(Budget()), run, limits)

        assert (
            run_agent(AgentOptions(bench, run, sampling, AgentBudget(tool_calls=10)), toolbox) == 2
        )
    store = RunStore(run)
    try:
        verdicts = {r.problem_id: r.verdict.value for r in store.results() if r.verdict}
        steps = [(pid, b) for pid, _, _, kind, b, _ in store.agent_steps() if kind == "tool"]
    finally:
        store.close()
    assert verdicts == {"zero": "OK", "swap": "OK"}
    denied = [b["result"] for pid, b in steps if "CHEAT_TAC" in b["arguments"]]
    assert denied[0]["error"]["verdict"] == "CHEATING"
    checked = [b["result"] for pid, b in steps if b["name"] == "check"]
    assert checked[0]["verdict"] == "FAIL" and checked[0]["feedback"]["goals"]
    found = [b["result"] for pid, b in steps if b["name"] == "search_theorems"]
    assert "theorems" in found[0]
