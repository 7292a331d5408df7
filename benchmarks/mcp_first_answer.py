"""Time to the first answer of `proofeval mcp`, as an agent meets it.

Starts `proofeval mcp BENCH` through the official MCP SDK's client over stdio and, as
soon as the session is up, calls start_state on the problem: measures the wall clock
from the process's start to that answer and to the warm-up's line saying the problem's
context is ready (stderr lines are timed as they come), and counts the progress
notifications the call got while it waited. Then applies a tactic to the root state
RUNS times and gives the median wall clock of one apply as the client sees it (stdio
and JSON included), beside that of read_problem, which reaches no prover. Run twice in
a row for cold and warm figures (the second finds the files in the page cache).

Usage: python benchmarks/mcp_first_answer.py {hol-light,coq} [--runs 20] [--native on]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

PROBLEMS = {
    "hol-light": ({"id": "p", "prover": "hol-light", "statement": "`!p q. p /\\ q ==> q /\\ p`"},
                  "REPEAT GEN_TAC THEN STRIP_TAC"),
    "coq": ({"id": "p", "prover": "coq", "header": "Require Import Arith Lia.",
             "statement": "Theorem swap : forall P Q : Prop, P /\\ Q -> Q /\\ P."},
            "intros P Q [HP HQ]."),
}  # fmt: skip


async def measure(prover: str, runs: int, extra: list[str], work: Path) -> dict:
    problem, tactic = PROBLEMS[prover]
    bench = work / "bench.jsonl"
    bench.write_text(json.dumps(problem) + "\n")
    log = work / "stderr.log"
    command = [sys.executable, "-m", "proofeval.cli", "mcp", str(bench), "--out",
               str(work / "run"), *extra]  # fmt: skip
    stamp = 'while IFS= read -r line; do echo "$(date +%s.%N) $line"; done > "$log"'
    params = StdioServerParameters(  # the server's stderr, each line timed, to a file
        command="bash",
        args=["-c", f'log="$1"; shift; exec "$@" 2> >({stamp})', "bash", str(log), *command],
        env=dict(os.environ),
    )
    notes: list[str] = []

    async def progress(_done: float, _total: float | None, message: str | None) -> None:
        notes.append(message or "")

    began = time.time()
    async with Client(params, read_timeout_seconds=900) as client:
        up = time.time() - began
        root = await client.call_tool("start_state", {"problem_id": "p"},
                                      progress_callback=progress)  # fmt: skip
        first = time.time() - began
        state = root.structured_content["id"]
        applies, reads = [], []
        for _ in range(runs):
            t = time.monotonic()
            await client.call_tool("apply_tactic", {"state_id": state, "tactic": tactic})
            applies.append(time.monotonic() - t)
            t = time.monotonic()  # a call that reaches no prover: the transport's share
            await client.call_tool("read_problem", {"problem_id": "p"})
            reads.append(time.monotonic() - t)
    lines = [line.split(" ", 1) for line in log.read_text().splitlines() if " " in line]
    ready = [float(t) - began for t, text in lines if "the context of p: ready" in text]
    return {"prover": prover, "session_up_s": round(up, 2), "first_start_state_s": round(first, 2),
            "context_ready_s": round(ready[0], 2) if ready else None,
            "progress_notifications": len(notes), "apply_median_ms":
            round(statistics.median(applies) * 1000, 1), "apply_max_ms":
            round(max(applies) * 1000, 1), "read_problem_median_ms":
            round(statistics.median(reads) * 1000, 1), "load_average": os.getloadavg()[0],
            "stderr": log.read_text()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prover", choices=sorted(PROBLEMS))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--native", choices=("on", "off"))
    args = parser.parse_args()
    extra = ["--native", args.native] if args.native else []
    with tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(measure(args.prover, args.runs, extra, Path(tmp)))
    print(found.pop("stderr"), file=sys.stderr)
    print(json.dumps(found))


if __name__ == "__main__":
    main()
