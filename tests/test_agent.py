"""`proofeval run --agent` end to end on Coq: the real HTTP stub server plays a model that
calls the checker's tools (function calling), including hostile calls: an unknown tool,
arguments that are not JSON, an argument of the wrong type, a tactic the policy denies,
and a model that never stops calling tools (its budget runs out). The real coqtop checks,
the real SQLite store keeps every step; the verdict is the checker's on the submit."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.report.rounds import agent_summary
from proofeval.store import RunStore
from tests.openai_stub import StubServer

pytestmark = pytest.mark.coq

ROOT = Path(__file__).resolve().parents[1]
HEADER = "Require Import Arith Lia."
PROBLEMS = {
    "coq.add0": "Theorem add0 : forall n : nat, n + 0 = n.",
    "coq.le": "Theorem le : forall a b : nat, a < b -> a <= b.",
    "coq.loop": "Theorem loop : forall n : nat, n * 1 = n + 1.",
    "coq.quiet": "Theorem quiet : 2 + 2 = 4.",
}


def call(name: str, arguments: dict | str, n: int) -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call{n}", "type": "function", "function": {"name": name, "arguments": text}}


def calls(*items: tuple[str, dict | str]) -> dict:
    made = [call(name, args, i) for i, (name, args) in enumerate(items)]
    return {"role": "assistant", "content": None, "tool_calls": made}


def results(body: dict) -> list[dict]:
    """The tool results of the model's last turn, in order."""
    found = []
    for m in reversed(body["messages"]):
        if m["role"] != "tool":
            break
        found.append(json.loads(m["content"]))
    return found[::-1]


def agent(body: dict) -> dict:
    """A scripted model: what it does depends on the problem and on how far it got."""
    assert [t["function"]["name"] for t in body["tools"]] == [
        "check", "start_state", "apply_tactic", "search_theorems", "submit"]  # fmt: skip
    first = body["messages"][0]["content"]
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    if PROBLEMS["coq.add0"] in first:
        if turn == 0:
            return calls(("rm_rf", {"path": "/"}), ("check", "{not json"),
                         ("search_theorems", {"pattern": 5}), ("start_state", {}))  # fmt: skip
        last = results(body)
        if turn == 1:
            state = last[-1]["id"]
            return calls(("apply_tactic", {"state_id": state, "tactic": "Admitted."}),
                         ("apply_tactic", {"state_id": state, "tactic": "intros n."}))  # fmt: skip
        if turn == 2:
            return calls(("apply_tactic", {"state_id": last[-1]["id"], "tactic": "lia."}))
        return calls(("submit", {"state_id": last[-1]["id"]}))
    if PROBLEMS["coq.le"] in first:
        if turn == 0:
            return calls(("check", {"proof": "intros a b H. reflexivity."}))
        return calls(("submit", {"proof": "intros a b H. lia."}))
    if PROBLEMS["coq.loop"] in first:
        return calls(("check", {"proof": "intros n. lia."}), ("check", {"proof": "auto."}))
    return {"role": "assistant", "content": "I think it is obvious."}


@pytest.fixture
def agent_run(stub_server: StubServer, tmp_path: Path) -> Path:
    stub_server.converse_with(agent)
    bench = tmp_path / "bench.jsonl"
    rows = [{"id": pid, "prover": "coq", "category": "arith", "header": HEADER, "statement": s}
            for pid, s in PROBLEMS.items()]  # fmt: skip
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    args = ["run", str(bench), "--out", str(run), "--model", "stub", "--base-url",
            stub_server.url, "--agent", "--max-tool-calls", "9", "--workers", "2"]  # fmt: skip
    assert main(args) == 0
    return run


def test_agent_tools_verdicts_and_hostile_calls(agent_run: Path, stub_server: StubServer) -> None:
    store = RunStore(agent_run)
    try:
        found = {r.problem_id: (r.verdict.value, r.message) for r in store.results()}
        attempts = {a.problem_id: a.proof for a in store.attempts()}
        steps = store.agent_steps()
    finally:
        store.close()
    assert found["coq.add0"][0] == "OK"
    assert attempts["coq.add0"].split() == ["intros", "n.", "lia."]  # the state's path
    assert found["coq.le"][0] == "OK"
    assert found["coq.loop"] == ("FAIL", "no proof submitted: the budget of 9 tool calls is spent")
    assert found["coq.quiet"] == ("FAIL", "no proof submitted: the model stopped calling tools")

    tool = {(pid, b["name"], b["arguments"]): b["result"]
            for pid, _, _, kind, b, _ in steps if kind == "tool"}  # fmt: skip
    assert "no tool 'rm_rf'" in tool[("coq.add0", "rm_rf", '{"path": "/"}')]["error"]
    assert "not valid JSON" in tool[("coq.add0", "check", "{not json")]["error"]
    assert "must be a string" in tool[("coq.add0", "search_theorems", '{"pattern": 5}')]["error"]
    denied = [r for (pid, name, a), r in tool.items() if "Admitted" in a]
    assert denied and "error" in denied[0] and denied[0]["error"]["verdict"] == "CHEATING"
    # The FAIL of a check comes with the checker's feedback: the goal left.
    wrong = tool[("coq.le", "check", '{"proof": "intros a b H. reflexivity."}')]
    assert wrong["verdict"] == "FAIL" and wrong["feedback"]["goals"]
    # Past the budget, calls are answered with errors, and the conversation ends.
    loop = [b["result"] for pid, _, _, kind, b, _ in steps if pid == "coq.loop" and kind == "tool"]
    assert len(loop) == 10 and "budget of 9 tool calls" in loop[-1]["error"]
    assert all("verdict" in r for r in loop[:9])

    transcript = (agent_run / "agent-transcripts.jsonl").read_text().splitlines()
    assert len(transcript) == len(steps)

    summary = agent_summary(agent_run)
    assert summary is not None and summary.conversations == 4
    assert summary.tool_errors >= 5 and summary.tokens > 0 and summary.checker_seconds > 0


def test_agent_run_is_not_run_again(agent_run: Path, stub_server: StubServer) -> None:
    asked = stub_server.count()
    bench = agent_run.parent / "bench.jsonl"
    args = ["run", str(bench), "--out", str(agent_run), "--model", "stub", "--base-url",
            stub_server.url, "--agent", "--max-tool-calls", "9"]  # fmt: skip
    assert main(args) == 0
    assert stub_server.count() == asked  # every sample has its verdict


def test_an_agent_run_killed_mid_conversation_resumes(
    stub_server: StubServer, tmp_path: Path, scratch: Path
) -> None:
    run = tmp_path / "run"
    args = hanging(stub_server, tmp_path, run)
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "proofeval.cli", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while len(judged(run)) < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # what the killed run could not remove (its checker's, its states'), not left in /tmp
    assert list(scratch.glob("proofeval-coq-*")), "the run's scratch was not in TMPDIR"
    assert set(judged(run)) == {"coq.add0", "coq.loop", "coq.quiet"}
    store = RunStore(run)
    try:
        assert any(pid == "coq.le" for pid, *_ in store.agent_steps())  # its first turn
    finally:
        store.close()
    asked = {pid: stub_server.count(s) for pid, s in PROBLEMS.items()}

    assert main(args) == 0
    assert judged(run)["coq.le"] == "OK"
    # Only the conversation cut short ran again, from its start.
    assert {pid: stub_server.count(s) - asked[pid] for pid, s in PROBLEMS.items()} == {
        "coq.add0": 0, "coq.le": 2, "coq.loop": 0, "coq.quiet": 0}  # fmt: skip
    store = RunStore(run)
    try:
        le = [kind for pid, _, _, kind, _, _ in store.agent_steps() if pid == "coq.le"]
    finally:
        store.close()
    assert le == ["model", "tool", "model", "tool"]  # the cut transcript was replaced


def hanging(stub_server: StubServer, tmp_path: Path, run: Path, *more: str) -> list[str]:
    """The arguments of an agent run in which coq.le's second model turn hangs."""
    stub_server.converse_with(agent)
    for pid, statement in PROBLEMS.items():  # scripts name the requests, for counting
        delays = [0.0, 600.0] if pid == "coq.le" else []
        stub_server.script(statement, ["unused"], delays=delays)
    bench = tmp_path / "bench.jsonl"
    rows = [{"id": pid, "prover": "coq", "category": "arith", "header": HEADER, "statement": s}
            for pid, s in PROBLEMS.items()]  # fmt: skip
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["run", str(bench), "--out", str(run), "--model", "stub", "--base-url", stub_server.url,
            "--agent", "--max-tool-calls", "9", "--workers", "2", *more]  # fmt: skip


def test_sigterm_ends_an_agent_run_while_a_reply_hangs(
    stub_server: StubServer, tmp_path: Path, scratch: Path
) -> None:
    """At once, with what finished kept, no queued conversation started, and the
    checker's scratch removed (a thread pool waited for the reply, 600 s here)."""
    run = tmp_path / "run"
    args = hanging(stub_server, tmp_path, run, "--concurrency", "1")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "proofeval.cli", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while stub_server.count(PROBLEMS["coq.le"]) < 2:  # coq.add0 done, coq.le hanging
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):  # what it left, if anything
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted; finished verdicts are kept" in err and "Traceback" not in err
    assert judged(run) == {"coq.add0": "OK"}
    assert stub_server.count(PROBLEMS["coq.loop"]) == stub_server.count(PROBLEMS["coq.quiet"]) == 0
    assert not list(scratch.glob("proofeval-*")), "the checker was not closed"


def judged(run: Path) -> dict[str, str]:
    if not (run / "proofeval.sqlite").exists():
        return {}
    db = sqlite3.connect(run / "proofeval.sqlite", timeout=30)
    try:
        return dict(db.execute("SELECT problem_id, verdict FROM verdicts").fetchall())
    except sqlite3.OperationalError:
        return {}
    finally:
        db.close()


def test_agent_and_rounds_do_not_combine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"id": "x", "prover": "coq", "statement": PROBLEMS["coq.le"]}))
    args = ["run", str(bench), "--out", str(tmp_path / "run"), "--model", "m", "--agent",
            "--rounds", "2"]  # fmt: skip
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "do not combine" in err and "Traceback" not in err
