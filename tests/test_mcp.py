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

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from proofeval.agents.mcp_server import build_server, serve_stdio
from proofeval.agents.tools import Limits, Tools
from proofeval.loaders import load_benchmark
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.scale.api import Checker
from proofeval.scale.service.warmup import Warmup
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
    {"id": "coq.swap", "prover": "coq", "category": "logic", "header": "",
     "statement": "Theorem swap : forall P Q : Prop, P /\\ Q -> Q /\\ P."},
]  # fmt: skip


def payload(result) -> object:
    """A tool's result as data: its structured content (checked against the tool's
    published output schema) and its JSON text, which agree; a refused call (isError)
    as {"refused": its text}."""
    if result.is_error:
        return {"refused": result.content[0].text}
    data = result.structured_content
    assert data == json.loads(result.content[0].text)
    return data


class Caller:
    """The tools of one MCP client session, each reply validated with jsonschema
    against the output schema the server publishes."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.schemas: dict[str, dict] = {}

    async def load(self) -> list[str]:
        listed = (await self.client.list_tools()).tools
        self.schemas = {t.name: t.output_schema for t in listed}
        return sorted(self.schemas)

    async def __call__(self, name: str, progress: object = None, **arguments: object) -> dict:
        result = await self.client.call_tool(name, arguments, progress_callback=progress)
        data = payload(result)
        if "refused" not in data:
            jsonschema.validate(data, self.schemas[name])
        return data


SWAP = "intros P Q [HP HQ]."


async def session(bench: Path, run: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "proofeval.cli", "mcp", str(bench), "--out", str(run), "--workers", "1",
              "--max-checks", "5"],
        env=env,
    )  # fmt: skip
    seen: dict = {}
    async with Client(params, read_timeout_seconds=300) as client:
        tool = Caller(client)
        seen["tools"] = await tool.load()
        seen["version"] = client.server_info.version if client.server_info else ""
        # the first call, as the server starts: it waits for the context if need be
        root = seen["root"] = await tool("start_state", problem_id="coq.swap")
        seen["list"] = await tool("list_problems")
        seen["order"] = await tool("list_problems", category="order")
        seen["read"] = await tool("read_problem", problem_id="coq.both")
        seen["check"] = await tool("check", problem_id="coq.le", proof="reflexivity.")
        seen["fenced"] = await tool("check", problem_id="coq.le", proof="```coq\nlia.\n```")
        intro = seen["intro"] = await tool("apply_tactic", state_id=root["id"], tactic=SWAP)
        split = seen["split"] = await tool("apply_tactic", state_id=intro["id"], tactic="split.")
        seen["wrong"] = await tool("apply_tactic", state_id=split["id"], tactic="- exact HP.")
        seen["cheat"] = await tool("apply_tactic", state_id=split["id"], tactic="admit.")
        first = seen["first"] = await tool("apply_tactic", state_id=split["id"],
                                           tactic="- exact HQ.")  # fmt: skip
        done = seen["done"] = await tool("apply_tactic", state_id=first["id"], tactic="- exact HP.")
        seen["search"] = await tool(
            "search_theorems", problem_id="coq.both", pattern="(_ + 0 = _)", limit=2
        )
        seen["released"] = await tool("release_state", state_id=intro["id"])
        seen["submit_state"] = await tool("submit", problem_id="coq.swap", state_id=done["id"])
        seen["submit_text"] = await tool("submit", problem_id="coq.le", proof="intros. lia.")
        seen["errors"] = {
            "list_problems": await tool("list_problems", category=5),
            "read_problem": await tool("read_problem", problem_id="nope"),
            "check": await tool("check", problem_id="nope", proof="lia."),
            "start_state": await tool("start_state", problem_id="nope"),
            "apply_tactic": await tool("apply_tactic", state_id="deadbeef", tactic="lia."),
            "release_state": await tool("release_state", state_id=intro["id"]),
            "search_theorems": await tool("search_theorems", problem_id="nope", pattern="_"),
            "submit": await tool("submit", problem_id="coq.le", state_id=done["id"]),
            "missing": await tool("apply_tactic", state_id=done["id"]),
        }
        seen["over"] = await tool("submit", problem_id="coq.le", proof="lia.")
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
    assert [p["id"] for p in seen["list"]["problems"]] == ["coq.both", "coq.le", "coq.swap"]
    assert [p["id"] for p in seen["order"]["problems"]] == ["coq.le"]
    assert seen["read"]["statement"] == PROBLEMS[0]["statement"]
    assert "reference" not in seen["read"] and "split; lia" not in json.dumps(seen["read"])
    assert seen["check"]["verdict"] == "FAIL"  # a real check, with where it failed
    assert seen["check"]["feedback"]["failed_step"] == 0
    assert "a < b -> a <= b" in seen["check"]["feedback"]["goals"][0]
    # raw output sent as a proof: the hint says what this tool takes (it has no `extract`)
    assert seen["fenced"]["verdict"] == "ERROR"
    assert "send the proof alone" in seen["fenced"]["message"]
    assert "extract" not in seen["fenced"]["message"]
    assert seen["root"]["steps"] == [] and "P /\\ Q -> Q /\\ P" in seen["root"]["goals"][0]
    assert "HP : P" in seen["intro"]["goals"][0]  # hypotheses are part of the goal
    assert "error" not in seen["intro"] and "error" not in seen["split"]
    assert len(seen["split"]["goals"]) == 2
    assert all("HQ : Q" in goal for goal in seen["split"]["goals"])
    # a refused step answers the state it was applied to, unchanged, and why
    wrong = seen["wrong"]
    assert (wrong["id"], wrong["goals"]) == (seen["split"]["id"], seen["split"]["goals"])
    assert wrong["error"]["verdict"] == "FAIL" and wrong["error"]["tactic"] == "- exact HP."
    assert seen["cheat"]["error"]["verdict"] == "CHEATING"
    assert "error" not in seen["first"] and len(seen["first"]["goals"]) == 1
    assert seen["done"]["solved"] is True
    assert seen["done"]["steps"] == [SWAP, "split.", "- exact HQ.", "- exact HP."]
    assert any(t["name"].endswith("add_0_r") for t in seen["search"]["theorems"])
    assert len(seen["search"]["theorems"]) <= 2 and isinstance(seen["search"]["more"], bool)
    assert seen["released"] == {"released": seen["intro"]["id"]}
    assert seen["submit_state"]["verdict"] == "OK"
    assert seen["submit_state"]["proof"] == "\n".join(seen["done"]["steps"])
    assert seen["submit_text"]["verdict"] == "OK"
    errors = seen["errors"]
    assert all(set(e) == {"refused"} for e in errors.values()), errors  # each one isError
    assert "category" in errors["list_problems"]["refused"]
    for name in ("read_problem", "check", "start_state", "search_theorems"):
        assert "no problem 'nope'" in errors[name]["refused"], name
    assert "no state 'deadbeef'" in errors["apply_tactic"]["refused"]
    assert "no state" in errors["release_state"]["refused"]  # released above
    assert "is not a state of 'coq.le'" in errors["submit"]["refused"]
    assert "tactic" in errors["missing"]["refused"]
    assert "budget of 5 checks" in seen["over"]["refused"]
    assert seen["version"].startswith("proofeval ")
    calls = [json.loads(line) for line in (run / "mcp-calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in calls][:3] == ["start_state", "list_problems", "list_problems"]
    results = RunStore(run).results()
    submitted = [(r.problem_id, r.verdict) for r in results if r.verdict is not None]
    assert sorted(submitted) == [("coq.le", Verdict.OK), ("coq.swap", Verdict.OK)]


HOL_PROBLEMS = [
    {"id": "hol.swap", "prover": "hol-light", "category": "logic",
     "statement": "`!p q. p /\\ q ==> q /\\ p`"},
    {"id": "hol.mul", "prover": "hol-light", "category": "arith", "statement": "`!n. n * 1 = n`"},
]  # fmt: skip


@contextmanager
def hol_light_server(
    hol_base: WarmProcess, bench: Path, run: Path
) -> Iterator[tuple[list[str], Warmup]]:
    """`proofeval mcp`'s server (the command's Tools, Warmup and build_server) in a
    thread of this process, on the test session's loaded HOL Light, served over two
    FIFOs; the client's command relays its stdio pipes to them. Yields that command and
    the warm-up, not started: the test starts it, to call a tool before it is ready."""
    fifo_in, fifo_out = run.parent / "to-server", run.parent / "from-server"
    os.mkfifo(fifo_in)
    os.mkfifo(fifo_out)
    problems = load_benchmark(bench).problems
    settings = CheckSettings(workers=1)
    limits = Limits(checks=3, timeout=60.0, budget=Budget(steps=20))
    failures: list[BaseException] = []
    made: list[Warmup] = []
    ready = threading.Event()

    def serve() -> None:
        try:
            with (
                Checker(settings, warm={"hol-light": hol_base}) as checker,
                States(checker) as states,
                states.session(limits.budget) as session,
            ):
                tools = Tools(problems, checker, session, run, limits)
                made.append(Warmup(checker.warm_up, lambda: session, problems))
                ready.set()
                try:
                    with fifo_in.open() as stdin, fifo_out.open("w") as stdout:
                        serve_stdio(build_server(tools, made[0]), stdin, stdout)
                finally:
                    tools.close()
                    made[0].close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            failures.append(exc)
            ready.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(60) and made, failures
    yield ["sh", "-c", 'cat "$1" & exec cat > "$2"', "relay", str(fifo_out), str(fifo_in)], made[0]
    thread.join(timeout=120)
    assert not thread.is_alive() and not failures, failures


async def hol_light_session(command: list[str], warmup: Warmup) -> dict:
    seen: dict = {}
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, read_timeout_seconds=300) as client:
        tool = Caller(client)
        await tool.load()
        # called before the context is warm: the call waits, reporting progress
        progress: list[tuple[float, str | None]] = []
        reported = asyncio.Event()

        async def on_progress(done: float, _total: float | None, message: str | None) -> None:
            progress.append((done, message))
            reported.set()

        first = asyncio.ensure_future(tool("start_state", on_progress, problem_id="hol.swap"))
        await asyncio.wait_for(reported.wait(), 60)
        assert not first.done()
        warmup.start()
        root = seen["root"] = await first
        seen["progress"], seen["health"] = progress, warmup.as_json()
        seen["check"] = await tool("check", problem_id="hol.mul", proof="ACCEPT_TAC TRUTH")
        strip = seen["strip"] = await tool(
            "apply_tactic", state_id=root["id"], tactic="REPEAT GEN_TAC THEN STRIP_TAC"
        )
        split = seen["split"] = await tool("apply_tactic", state_id=strip["id"], tactic="CONJ_TAC")
        seen["cheat"] = await tool("apply_tactic", state_id=split["id"], tactic="CHEAT_TAC")
        seen["wrong"] = await tool("apply_tactic", state_id=split["id"], tactic="ACCEPT_TAC TRUTH")
        one = await tool("apply_tactic", state_id=split["id"], tactic="FIRST_ASSUM ACCEPT_TAC")
        done = seen["done"] = await tool(
            "apply_tactic", state_id=one["id"], tactic="FIRST_ASSUM ACCEPT_TAC"
        )
        seen["search"] = await tool("search_theorems", problem_id="hol.mul", pattern="`x * 1`")
        seen["submit"] = await tool("submit", problem_id="hol.swap", state_id=done["id"])
        seen["forged"] = await tool("submit", problem_id="hol.mul", state_id=done["id"])
        seen["bad_term"] = await tool("search_theorems", problem_id="hol.mul", pattern="`(`")
    return seen


def test_an_agent_proves_a_hol_light_problem_over_stdio(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(p) + "\n" for p in HOL_PROBLEMS))
    run = tmp_path / "run"
    run.mkdir()
    with hol_light_server(hol_base, bench, run) as (command, warmup):
        seen = asyncio.run(hol_light_session(command, warmup))
    assert seen["progress"] and "the context of hol.swap" in (seen["progress"][0][1] or "")
    assert all(c["status"] == "ready" for c in seen["health"]["contexts"].values())
    assert seen["check"]["verdict"] == "FAIL"
    assert seen["check"]["feedback"]["goals"] == [f"`{FORALL}n. n * 1 = n`"]
    assert seen["root"]["goals"] == [f"`{FORALL}p q. p /\\ q ==> q /\\ p`"]
    # the hypotheses are part of each goal, as print_goal shows them
    [stripped] = seen["strip"]["goals"]
    assert "`p`" in stripped and "`q`" in stripped and stripped.endswith("`q /\\ p`")
    assert "error" not in seen["split"] and len(seen["split"]["goals"]) == 2
    assert seen["cheat"]["error"]["verdict"] == "CHEATING"  # the deny-list holds per tactic
    wrong = seen["wrong"]
    assert wrong["error"]["verdict"] == "FAIL" and wrong["id"] == seen["split"]["id"]
    assert seen["done"]["solved"] is True
    assert any(t["name"] in ("MULT_CLAUSES", "MULT_1") for t in seen["search"]["theorems"])
    assert seen["submit"]["verdict"] == "OK"  # the ordinary checker's, replay included
    assert seen["submit"]["proof"].startswith("(REPEAT GEN_TAC THEN STRIP_TAC)")
    assert "CONJ_TAC" in seen["submit"]["proof"]
    assert "refused" in seen["forged"]  # a state of one problem is no proof of another
    assert seen["bad_term"]["theorems"] == []
    assert seen["bad_term"]["error"]["verdict"] in ("FAIL", "ERROR")
    results = RunStore(run).results()
    assert [(r.problem_id, r.verdict) for r in results] == [("hol.swap", Verdict.OK)]
    calls = [json.loads(line) for line in (run / "mcp-calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in calls][-3:] == ["submit", "submit", "search_theorems"]
