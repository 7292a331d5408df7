"""The transcripts of docs/service.md's "Proof states over HTTP and MCP": a real
`proofeval serve` and a real `proofeval mcp` (the official MCP SDK's client over stdio)
walk a Coq and a HOL Light proof with hypotheses, bullets and a failed step.

Usage: python docs/make_service_transcripts.py [--native on] > transcripts.md
(HOL Light's core loads first: a minute or two.) Ids are random: they differ per run."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import Client, StdioServerParameters

COQ = {"prover": "coq", "statement": "Theorem swap : forall P Q : Prop, P /\\ Q -> Q /\\ P."}
HOL = {"prover": "hol-light", "statement": "`!p q. p /\\ q ==> q /\\ p`"}
WALKS = [  # the problem, then each step on the state before, or on the state named
    (COQ, ["intros P Q [HP HQ].", "split.", ("- exact HP.", "wrong"), "- exact HQ.",
           "- exact HP."]),
    (HOL, ["REPEAT GEN_TAC THEN STRIP_TAC", "CONJ_TAC", ("ACCEPT_TAC TRUTH", "wrong"),
           "FIRST_ASSUM ACCEPT_TAC", "FIRST_ASSUM ACCEPT_TAC"]),
]  # fmt: skip


def shown(data: Any, whole: bool = False) -> str:
    """A reply as the transcript shows it: the structured goals (`proof_state`) only when
    `whole`, else elided."""
    if isinstance(data, dict) and isinstance(data.get("proof_state"), dict):
        data = data | ({} if whole else {"proof_state": "..."})
    return json.dumps(data, ensure_ascii=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(extra: list[str]) -> list[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "proofeval.cli", "serve", "--port", str(port), "--provers",
           "coq,hol-light", "--workers", "1", *extra]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lines: list[str] = []
    try:
        while True:
            try:
                health = httpx.get(f"{url}/health")
                if health.status_code == 200:
                    break
            except httpx.ConnectError:
                pass
            time.sleep(1)
        lines += ["GET /health", f"  200 {shown(health.json())}"]

        def call(method: str, path: str, body: Any = None, whole: bool = False) -> dict:
            reply = httpx.request(method, url + path, json=body, timeout=120)
            shown_path = path.replace(sid, "SID") if sid else path
            lines.append(f"{method} {shown_path} {json.dumps(body) if body else ''}".rstrip())
            lines.append(f"  {reply.status_code} {shown(reply.json(), whole)}")
            return reply.json()

        for problem, steps in WALKS:
            sid = ""
            sid = call("POST", "/states", {"budget": {"steps": 20}})["session"]
            state = call("POST", f"/states/{sid}/start", {"problem": problem})
            for n, step in enumerate(steps):
                tactic = step[0] if isinstance(step, tuple) else step
                body = {"state_id": state["id"], "tactic": tactic}
                new = call("POST", f"/states/{sid}/apply", body, whole=n == 1)
                if not isinstance(step, tuple):
                    state = new
            call("POST", f"/states/{sid}/finish", {"state_id": state["id"]})
            if problem is COQ:
                call("POST", f"/states/{sid}/apply", {"state": state["id"], "tactic": "idtac."})
                call("POST", f"/states/{sid}/release", {"state_id": "deadbeef"})
            call("DELETE", f"/states/{sid}")
    finally:
        proc.terminate()
        proc.wait(60)
    return lines


async def mcp(extra: list[str], work: Path) -> list[str]:
    bench = work / "bench.jsonl"
    rows = [{"id": "coq.swap", **COQ}, {"id": "hol.swap", **HOL}]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "proofeval.cli", "mcp", str(bench), "--out", str(work / "run"), *extra],
        env=dict(os.environ),
    )
    lines: list[str] = []
    async with Client(params, read_timeout_seconds=900) as client:
        waited: list[str] = []

        async def progress(_done: float, _total: float | None, message: str | None) -> None:
            waited.append(message or "")

        async def tool(name: str, whole: bool = False, **arguments: Any) -> dict:
            result = await client.call_tool(name, arguments, progress_callback=progress)
            if waited:
                lines.append(f"  (progress: {waited[0]!r} ... {len(waited)} notifications)")
                waited.clear()
            lines.append(f"{name} {json.dumps(arguments)}")
            if result.is_error:
                lines.append(f"  isError: {result.content[0].text}")
                return {}
            lines.append(f"  {shown(result.structured_content, whole)}")
            return result.structured_content

        for problem, steps in reversed(WALKS):  # HOL Light first: it waits for its core
            pid = "coq.swap" if problem is COQ else "hol.swap"
            state = await tool("start_state", problem_id=pid)
            for n, step in enumerate(steps):
                tactic = step[0] if isinstance(step, tuple) else step
                new = await tool("apply_tactic", n == 1, state_id=state["id"], tactic=tactic)
                if not isinstance(step, tuple):
                    state = new
            await tool("submit", problem_id=pid, state_id=state["id"])
        await tool("start_state", problem_id="nope")
        await tool("check", problem_id="coq.swap", proof="```coq\nintros. tauto.\n```")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--native", choices=("on", "off"))
    args = parser.parse_args()
    extra = ["--native", args.native] if args.native else []
    print("```\n" + "\n".join(http(extra)) + "\n```\n")
    with tempfile.TemporaryDirectory() as tmp:
        print("```\n" + "\n".join(asyncio.run(mcp(extra, Path(tmp)))) + "\n```")


if __name__ == "__main__":
    main()
