"""proofeval mcp: the official MCP SDK's own client drives `proofeval mcp BENCH` over a
real stdio pipe: list and read problems, check, proof states, search, submit; every call
is logged to the run directory and every submit is an attempt in its store. Real coqtop,
and real HOL Light (the test session's core, shared with an in-process server)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from proofeval.agents.mcp_server import build_server, serve_stdio
from proofeval.agents.tools import Limits, Tools
from proofeval.loaders import load_benchmark
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget
from proofeval.store import RunStore
from tests.conftest import FORALL

pytestmark = pytest.mark.service

ROOT = Path(__file__).resolve().parents[1]
HEADER = "Require Import Arith Lia."
PROBLEMS = [
    {"id": "coq.both", "prover": "coq", "category": "arith", "header": HEADER,
     "statement": "Theorem both : forall n : nat, n + 0 = n /\\ 0 + n = n.",
     "reference": "intros n. split; lia."},
    {"id": "coq.le", "prover": "coq", "category": "order", "header": HEADER,
     "statement": "Theorem le : forall a b : nat, a < b -> a <= b."},
]  # fmt: skip


def payload(result) -> object:
    """A tool's result as data: its structured content, else its text as JSON; a refused
    call (isError) as {"refused": its text}."""
    if result.is_error:
        return {"refused": result.content[0].text}
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) and len(data) == 1 else data
    return json.loads(result.content[0].text)


async def session(bench: Path, run: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "proofeval.cli", "mcp", str(bench), "--out", str(run), "--workers", "1",
              "--max-checks", "3"],
        env=env,
    )  # fmt: skip
    seen: dict = {}
    async with Client(params, read_timeout_seconds=300) as client:

        async def tool(name: str, **arguments: object) -> object:
            return payload(await client.call_tool(name, arguments))

        seen["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        seen["version"] = client.server_info.version if client.server_info else ""
        seen["list"] = await tool("list_problems")
        seen["order"] = await tool("list_problems", category="order")
        seen["read"] = await tool("read_problem", problem_id="coq.both")
        seen["check"] = await tool("check", problem_id="coq.le", proof="reflexivity.")
        root = await tool("start_state", problem_id="coq.both")
        split = seen["split"] = await tool(
            "apply_tactic", state_id=root["id"], tactic="intros n. split."
        )
        seen["bad"] = await tool("apply_tactic", state_id=split["id"], tactic="admit.")
        done = seen["done"] = await tool("apply_tactic", state_id=split["id"], tactic="all: lia.")
        seen["search"] = await tool(
            "search_theorems", problem_id="coq.both", pattern="(_ + 0 = _)", limit=2
        )
        seen["submit_state"] = await tool("submit", problem_id="coq.both", state_id=done["id"])
        seen["submit_text"] = await tool("submit", problem_id="coq.le", proof="intros. lia.")
        seen["over"] = await tool("submit", problem_id="coq.le", proof="lia.")
        seen["unknown"] = await tool("read_problem", problem_id="nope")
    return seen


def test_an_agent_session_over_stdio(tmp_path: Path) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    run = tmp_path / "run"
    seen = asyncio.run(session(bench, run))
    assert seen["tools"] == sorted(
        ["list_problems", "read_problem", "check", "start_state", "apply_tactic",
         "release_state", "search_theorems", "submit"]
    )  # fmt: skip
    assert [p["id"] for p in seen["list"]] == ["coq.both", "coq.le"]
    assert [p["id"] for p in seen["order"]] == ["coq.le"]
    assert seen["read"]["statement"] == PROBLEMS[0]["statement"]
    assert "reference" not in seen["read"] and "split; lia" not in json.dumps(seen["read"])
    assert seen["check"]["verdict"] == "FAIL"  # a real check, with where it failed
    assert seen["check"]["feedback"]["failed_step"] == 0
    assert "a < b -> a <= b" in seen["check"]["feedback"]["goals"][0]
    assert len(seen["split"]["goals"]) == 2
    assert seen["bad"]["error"]["verdict"] == "CHEATING"
    assert seen["done"]["solved"] is True
    assert any("add_0_r" in t for t in seen["search"]["theorems"])
    assert seen["submit_state"]["verdict"] == "OK"
    assert seen["submit_state"]["proof"] == "intros n. split.\nall: lia."
    assert seen["submit_text"]["verdict"] == "OK"
    assert "budget of 3 checks" in seen["over"]["refused"]  # isError, not a result
    assert "no problem 'nope'" in seen["unknown"]["refused"]
    assert seen["version"].startswith("proofeval ")
    calls = [json.loads(line) for line in (run / "mcp-calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in calls][:3] == ["list_problems", "list_problems", "read_problem"]
    assert len(calls) == 13 and calls[-4]["result"]["verdict"] == "OK"
    results = RunStore(run).results()
    submitted = [(r.problem_id, r.verdict) for r in results if r.verdict is not None]
    assert sorted(submitted) == [("coq.both", Verdict.OK), ("coq.le", Verdict.OK)]


HOL_PROBLEMS = [
    {"id": "hol.both", "prover": "hol-light", "category": "arith",
     "statement": "`!n. n + 0 = n /\\ 0 + n = n`"},
    {"id": "hol.mul", "prover": "hol-light", "category": "arith", "statement": "`!n. n * 1 = n`"},
]  # fmt: skip


@contextmanager
def hol_light_server(hol_base: WarmProcess, bench: Path, run: Path) -> Iterator[list[str]]:
    """`proofeval mcp`'s server (the command's Tools and build_server) in a thread of
    this process, on the test session's loaded HOL Light, served over two FIFOs; the
    client's command relays its stdio pipes to them. Yields that command."""
    fifo_in, fifo_out = run.parent / "to-server", run.parent / "from-server"
    os.mkfifo(fifo_in)
    os.mkfifo(fifo_out)
    problems = load_benchmark(bench).problems
    settings = CheckSettings(workers=1)
    limits = Limits(checks=3, timeout=60.0, budget=Budget(steps=20))
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            with (
                Checker(settings, warm={"hol-light": hol_base}) as checker,
                States(checker) as states,
                states.session(limits.budget) as session,
            ):
                tools = Tools(problems, checker, session, run, limits)
                try:
                    with fifo_in.open() as stdin, fifo_out.open("w") as stdout:
                        serve_stdio(build_server(tools), stdin, stdout)
                finally:
                    tools.close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            failures.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield ["sh", "-c", 'cat "$1" & exec cat > "$2"', "relay", str(fifo_out), str(fifo_in)]
    thread.join(timeout=120)
    assert not thread.is_alive() and not failures, failures


async def hol_light_session(command: list[str]) -> dict:
    seen: dict = {}
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, read_timeout_seconds=300) as client:

        async def tool(name: str, **arguments: object) -> object:
            return payload(await client.call_tool(name, arguments))

        seen["check"] = await tool("check", problem_id="hol.mul", proof="ACCEPT_TAC TRUTH")
        root = seen["root"] = await tool("start_state", problem_id="hol.both")
        split = seen["split"] = await tool(
            "apply_tactic", state_id=root["id"], tactic="GEN_TAC THEN CONJ_TAC"
        )
        seen["cheat"] = await tool("apply_tactic", state_id=split["id"], tactic="CHEAT_TAC")
        seen["wrong"] = await tool("apply_tactic", state_id=split["id"], tactic="ACCEPT_TAC TRUTH")
        one = await tool("apply_tactic", state_id=split["id"], tactic="ARITH_TAC")
        done = seen["done"] = await tool("apply_tactic", state_id=one["id"], tactic="ARITH_TAC")
        seen["search"] = await tool("search_theorems", problem_id="hol.both", pattern="`x + 0`")
        seen["submit"] = await tool("submit", problem_id="hol.both", state_id=done["id"])
        seen["forged"] = await tool("submit", problem_id="hol.mul", state_id=done["id"])
    return seen


def test_an_agent_proves_a_hol_light_problem_over_stdio(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(p) + "\n" for p in HOL_PROBLEMS))
    run = tmp_path / "run"
    run.mkdir()
    with hol_light_server(hol_base, bench, run) as command:
        seen = asyncio.run(hol_light_session(command))
    assert seen["check"]["verdict"] == "FAIL"
    assert seen["check"]["feedback"]["goals"] == [f"`{FORALL}n. n * 1 = n`"]
    assert seen["root"]["goals"] == [f"`{FORALL}n. n + 0 = n /\\ 0 + n = n`"]
    assert seen["split"]["goals"] == ["`n + 0 = n`", "`0 + n = n`"]
    assert seen["cheat"]["error"]["verdict"] == "CHEATING"  # the deny-list holds per tactic
    assert seen["wrong"]["error"]["verdict"] == "FAIL"
    assert seen["done"]["solved"] is True
    assert any("ADD_0" in t for t in seen["search"]["theorems"])
    assert seen["submit"]["verdict"] == "OK"  # the ordinary checker's, replay included
    assert seen["submit"]["proof"] == "(GEN_TAC THEN CONJ_TAC) THENL [((ARITH_TAC)); ((ARITH_TAC))]"
    assert "refused" in seen["forged"]  # a state of one problem is no proof of another
    results = RunStore(run).results()
    assert [(r.problem_id, r.verdict) for r in results] == [("hol.both", Verdict.OK)]
    calls = [json.loads(line) for line in (run / "mcp-calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in calls][-2:] == ["submit", "submit"] and len(calls) == 10
