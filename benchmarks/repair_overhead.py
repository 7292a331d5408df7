"""What a repair round and an agent's tool call cost on top of a plain run, in one run on
the demo benchmark with a scripted stub model (tests/openai_stub.py), sharing one warm
checker (HOL Light's core loaded once).

1. plain: `run` with no rounds; every problem answered wrongly (HOL Light ALL_TAC, Coq
   idtac) or, for a third of them, with its reference proof;
2. repair: the same run with --rounds 2 into a fresh run directory: a third are repaired
   in round 1, the rest in round 2 (the reference proof);
3. agent: one conversation per problem: check a wrong proof (a FAIL, with feedback),
   check the reference, submit it: 3 tool calls and 4 model turns.
Prints the per-round table of the repair run, and per-unit costs: wall clock and CPU
(this process plus every prover process), with the ratio to a plain attempt.

Usage: PYTHONPATH=src:. python benchmarks/repair_overhead.py [--native auto|on|off]
       [--provers hol-light,coq]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from cpu import tree_cpu
from tests.openai_stub import StubServer

from proofeval.agents.toolbox import AgentToolbox
from proofeval.agents.tools import Limits
from proofeval.commands.repair_judge import CheckerJudge
from proofeval.generate.client import SamplingSettings
from proofeval.loaders import load_benchmark
from proofeval.model import Outcome, Problem
from proofeval.provers.interface import CheckSettings
from proofeval.report.rounds import format_rounds, load_rounds
from proofeval.runs.agent import AgentBudget, AgentOptions, run_agent
from proofeval.runs.repair import RepairOptions, run_with_repairs
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget

DEMO = Path(__file__).resolve().parents[1] / "src/proofeval/demo/problems.jsonl"
WRONG = {"hol-light": "ALL_TAC", "coq": "idtac."}
LANG = {"hol-light": "ocaml", "coq": "coq"}


def answer(p: Problem, index: int, round_number: int) -> str:
    """Right at round index % 3 (round 2 for the rest), wrong before."""
    right = round_number >= min(index % 3, 2)
    proof = p.reference if right and p.reference else WRONG[p.prover]
    return f"```{LANG[p.prover]}\n{proof}\n```"


def asked_about(problems: list[Problem], prompt: str) -> int | None:
    """The index of the problem a prompt asks about: the statement that comes last (a
    template's worked examples come before the goal)."""
    where = {i: prompt.rfind(p.statement) for i, p in enumerate(problems)}
    found = max(where, key=lambda i: where[i], default=None)
    return None if found is None or where[found] < 0 else found


def responder(problems: list[Problem]):
    def respond(prompt: str) -> str | None:
        number = max((r for r in (1, 2) if f"This was attempt {r}." in prompt), default=0)
        i = asked_about(problems, prompt)
        return None if i is None else answer(problems[i], i, number)

    return respond


def converser(problems: list[Problem]):
    def call(name: str, args: dict) -> dict:
        function = {"name": name, "arguments": json.dumps(args)}
        made = [{"id": "c", "type": "function", "function": function}]
        return {"role": "assistant", "content": None, "tool_calls": made}

    def converse(body: dict) -> dict | None:
        if "tools" not in body:
            return None  # a plain or repair prompt: the responder answers
        first = body["messages"][0]["content"]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        i = asked_about(problems, first)
        if i is None:
            return None
        p = problems[i]
        if turn == 0:
            return call("check", {"proof": WRONG[p.prover]})
        if turn == 1:
            return call("check", {"proof": p.reference})
        if turn == 2:
            return call("submit", {"proof": p.reference})
        return {"role": "assistant", "content": "done"}

    return converse


class NoFeedback(CheckerJudge):
    def explain(self, problem: Problem, proof: str, outcome: Outcome) -> dict | None:
        return None


def measure(label: str, work) -> tuple[float, float]:
    wall, used = time.perf_counter(), tree_cpu()
    work()
    wall, used = time.perf_counter() - wall, tree_cpu() - used
    print(f"{label}: {wall:.1f} s wall, {used:.1f} s CPU", flush=True)
    return wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--native", default="auto", choices=("auto", "on", "off"))
    parser.add_argument("--provers", default="hol-light,coq")
    parser.add_argument(
        "--no-feedback",
        action="store_true",
        help="repair prompts without the states' feedback (verdict and message only), to "
        "tell the feedback's cost from the round's",
    )
    args = parser.parse_args()
    provers = set(args.provers.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="repair-bench-"))
    problems = [p for p in load_benchmark(DEMO).problems if p.prover in provers]
    bench = tmp / "bench.jsonl"
    bench.write_text("".join(json.dumps(p.__dict__) + "\n" for p in problems))
    settings = CheckSettings(workers=2, native=args.native)
    server = StubServer()
    server.respond_with(responder(problems))
    server.converse_with(converser(problems))
    sampling = SamplingSettings(model="stub", base_url=server.url, backoff_base=0.01)
    with Checker(settings) as checker, States(checker) as states:
        warm: dict[str, object] = {}
        if "hol-light" in provers:

            def load() -> None:
                warm["hol-light"] = checker.warm_process("hol-light")

            measure("loading HOL Light", load)

        def plain() -> None:
            run_pipeline(RunOptions(bench, tmp / "plain", sampling, settings=settings), warm)

        def repair() -> None:
            opts = RunOptions(bench, tmp / "repair", sampling, settings=settings)
            with states.session(Budget()) as session:
                judge = (
                    NoFeedback(checker, session)
                    if args.no_feedback
                    else CheckerJudge(checker, session)
                )
                run_with_repairs(opts, RepairOptions(2, sampling), judge, warm)

        def agent() -> None:
            limits = Limits(checks=10, timeout=60.0)

            def box(p: Problem) -> AgentToolbox:
                return AgentToolbox(p, checker, states.session(Budget()), tmp / "agent", limits)

            run_agent(AgentOptions(bench, tmp / "agent", sampling, AgentBudget()), box)

        measure("warm-up (a plain run, not counted)", lambda: run_pipeline(
            RunOptions(bench, tmp / "warm", sampling, settings=settings), warm))  # fmt: skip
        base = measure("plain run", plain)
        rep = measure("repair run (--rounds 2)", repair)
        ag = measure("agent run", agent)
    server.close()
    rounds = load_rounds(tmp / "repair")
    repairs = sum(1 for s in rounds if s.round > 0)
    calls = 3 * len(problems)
    n = len(problems)
    print(f"\n{n} problems ({', '.join(sorted(provers))}); {repairs} repair rounds; "
          f"{calls} tool calls\n")  # fmt: skip
    print(format_rounds(rounds) + "\n")
    per = [("plain attempt", base[0] / n, base[1] / n)]
    per.append(("repair round (extra)", (rep[0] - base[0]) / repairs, (rep[1] - base[1]) / repairs))
    per.append(("agent tool call (extra)", (ag[0] - base[0]) / calls, (ag[1] - base[1]) / calls))
    print(f"{'per unit':26} {'wall s':>8} {'CPU s':>8} {'CPU vs plain':>13}")
    for label, wall, used in per:
        print(f"{label:26} {wall:8.3f} {used:8.3f} {used / per[0][2]:12.2f}x")
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
