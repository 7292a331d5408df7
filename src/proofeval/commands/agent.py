"""`run --agent`'s options, and the run: one conversation per problem and sample, with
the agent tools (agents/toolbox.py) as the model's function-calling tools."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.agents.toolbox import AgentToolbox
from proofeval.agents.tools import Limits
from proofeval.commands.bench_options import selection
from proofeval.commands.options import checker_settings, positive
from proofeval.console import say
from proofeval.loaders import load_benchmark
from proofeval.model import Problem
from proofeval.provers.backend import SharedProcess
from proofeval.provers.registry import supported
from proofeval.runs import manifest
from proofeval.runs.agent import INSTRUCTIONS, AgentBudget, AgentOptions, run_agent
from proofeval.runs.stream import RunOptions, recorded
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget


def add_agent_options(p) -> None:
    g = p.add_argument_group("agentic runs")
    g.add_argument(
        "--agent",
        action="store_true",
        help="give the model the checker as tools (check, start_state, apply_tactic, "
        "search_theorems, submit) through the endpoint's function calling; the verdict is "
        "the checker's on what it submits",
    )
    g.add_argument(
        "--max-tool-calls",
        type=positive(int),
        default=40,
        metavar="N",
        help="tool calls per problem and sample (default %(default)s)",
    )
    g.add_argument(
        "--max-agent-tokens",
        type=positive(int),
        default=200_000,
        metavar="N",
        help="prompt plus completion tokens per problem and sample (default %(default)s)",
    )
    g.add_argument(
        "--agent-seconds",
        type=positive(float),
        default=900.0,
        metavar="S",
        help="wall time per problem and sample (default %(default)s)",
    )


def agent_procedure(args: argparse.Namespace) -> dict[str, object]:
    """The agent's settings in the run's identity (runs/manifest.py)."""
    return manifest.agent(args.max_tool_calls, args.max_agent_tokens, args.agent_seconds,
                          INSTRUCTIONS)  # fmt: skip


def run_agentic(
    args: argparse.Namespace,
    run: RunOptions,
    warm: dict[str, SharedProcess] | None = None,
) -> int:
    """`run --agent`: one conversation per problem and sample without a verdict; `run`
    the run's options (its identity carries the agent's, `agent_procedure`)."""
    problems = load_benchmark(args.problems, selection(args)).problems
    directories = {Path(p.directory) for p in problems if p.directory}
    budget = AgentBudget(args.max_tool_calls, args.max_agent_tokens, args.agent_seconds)
    states_budget = Budget(memory_mb=args.memory_limit)
    limits = Limits(checks=args.max_tool_calls, timeout=args.timeout, budget=states_budget)
    record = recorded(run, [p for p in problems if p.prover in supported()])
    opts = AgentOptions(args.problems, run.out, run.sampling, budget, args.template,
                        selection(args), record)  # fmt: skip
    settings = checker_settings(args)
    with (
        Checker(settings, timeout=args.timeout, read_only=directories, warm=warm, on_event=say)
        as checker,
        States(checker) as states,
    ):  # fmt: skip

        def toolbox(problem: Problem) -> AgentToolbox:
            session = states.session(states_budget)
            return AgentToolbox(problem, checker, session, run.out, limits)

        return run_agent(opts, toolbox)
