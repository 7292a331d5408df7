"""proofeval mcp: a Model Context Protocol server over stdio, for coding agents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.options import add_checker_options, checker_settings, positive
from proofeval.errors import InputError


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve a benchmark to a coding agent over MCP (stdio): check, proof states, submit",
        description="A Model Context Protocol server on stdin/stdout (the official MCP Python "
        "SDK) with tools to list and read the benchmark's problems, check a proof, start a "
        "proof state, apply a tactic, search the context's theorems and submit a final "
        "proof. Every call and result is appended to RUN_DIR/mcp-calls.jsonl; submitted "
        "proofs are checked by the ordinary checker and kept in RUN_DIR's store. The provers "
        "and the benchmark's contexts start at once (progress on stderr); a call about a "
        "problem whose context is loading waits, with MCP progress notifications.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    p.add_argument("--out", type=Path, required=True, metavar="RUN_DIR", help="run directory")
    p.add_argument(
        "--max-checks",
        type=positive(int),
        default=200,
        help="check and submit calls allowed in the session (default %(default)s)",
    )
    p.add_argument(
        "--max-steps",
        type=positive(int),
        default=2000,
        help="tactics applied and searches allowed (default %(default)s)",
    )
    p.add_argument(
        "--max-states",
        type=positive(int),
        default=1000,
        help="proof states held at once (default %(default)s)",
    )
    p.add_argument(
        "--step-seconds",
        type=positive(float),
        default=1800.0,
        help="CPU seconds all steps together may take (default %(default)s)",
    )
    p.add_argument(
        "--step-timeout",
        type=positive(float),
        default=30.0,
        help="wall clock of one step in seconds (default %(default)s)",
    )
    add_checker_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from proofeval.agents.mcp_server import build_server, serve_stdio
    from proofeval.agents.tools import Limits, Tools
    from proofeval.loaders import load_benchmark
    from proofeval.scale.api import Checker
    from proofeval.scale.service.warmup import Warmup
    from proofeval.scale.sessions import States
    from proofeval.states import Budget

    bench = load_benchmark(args.problems, selection(args))
    if not bench.problems:
        raise InputError(f"{args.problems}: no problems")
    settings = checker_settings(args)
    budget = Budget(
        steps=args.max_steps,
        seconds=args.step_seconds,
        live=args.max_states,
        step_timeout=args.step_timeout,
        memory_mb=args.memory_limit,
    )
    limits = Limits(checks=args.max_checks, timeout=args.timeout, budget=budget)
    directories = {Path(p.directory) for p in bench.problems if p.directory}
    with (
        Checker(settings, timeout=args.timeout, read_only=directories, on_event=_say) as checker,
        States(checker) as states,
        states.session(budget) as session,
    ):
        tools = Tools(bench.problems, checker, session, args.out, limits)
        # the provers and contexts load while the client connects; a call waits for its own
        warmup = Warmup(checker.warm_up, lambda: session, bench.problems, say=_say).start()
        try:
            serve_stdio(build_server(tools, warmup))
        finally:
            tools.close()
            warmup.close()
    return 0


def _say(message: str) -> None:
    print(f"proofeval: {message}", file=sys.stderr)
