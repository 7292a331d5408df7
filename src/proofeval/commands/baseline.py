"""proofeval baseline: the automatic-prover row papers print beside models."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.baselines import atp, tactics
from proofeval.baselines.run import CSV_NAME, BaselineOptions, closers, run_baseline, solve_table
from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.options import add_checker_options, checker_settings, positive
from proofeval.console import say
from proofeval.loaders import load_benchmark
from proofeval.provers import registry


def _methods_help() -> str:
    """Each method with the provers that have it and their portfolio's size."""
    rows = []
    for method in tactics.METHODS:
        provers = [
            f"{name}: {len(backend.baselines[method].tactics)} tactics"
            for name, backend in sorted(registry.BACKENDS.items())
            if method in backend.baselines
        ]
        rows.append(f"{method} ({', '.join(provers)})")
    rows.append(
        f"{atp.METHOD} (a benchmark `build why3` wrote: Why3's automatic provers, see --atp-budget)"
    )
    return " or ".join(rows) + "; the tactics are each prover's (provers/NAME/backend.py)"


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "baseline",
        help="run standard automation (a tactic portfolio, or a hammer) as the answers",
        description="Try each tactic of a portfolio on every problem, each as one attempt "
        "with its own time budget (--tactic-timeout, instead of the benchmark's limits and "
        "--timeout); a problem is solved when any tactic closes it. Prints the solve rate "
        f"per category and writes RUN_DIR/{CSV_NAME} (the tactic that closed each problem) "
        "beside results.csv; `proofeval report RUN_DIR` shows each tactic as one attempt. "
        "Re-running on the same --out resumes.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    p.add_argument(
        "--method",
        required=True,
        metavar="METHOD",
        help=f"what to try: {_methods_help()}",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help=f"run directory: SQLite store, results.csv, {CSV_NAME}",
    )
    p.add_argument(
        "--tactic-timeout",
        type=positive(float),
        default=None,
        metavar="SECONDS",
        help=f"wall-clock budget of each tactic on each problem (default "
        f"{tactics.DEFAULT_TIMEOUT:g}; coq hammer: CoqHammer's own limits, its ATPs' and its "
        f"reconstruction's, and coqtop's time around them: "
        f"{tactics.default_timeout('coq', 'hammer'):g})",
    )
    p.add_argument(
        "--problem-timeout",
        type=positive(float),
        default=None,
        metavar="SECONDS",
        help="a paper's budget per problem instead (NTP4VC's hammer row: 600): each tactic "
        "gets it, and CoqHammer's ATPs get it less reconstruction (Set Hammer ATPLimit)",
    )
    add_atp_options(p)
    add_checker_options(p)
    p.set_defaults(handler=run)


def add_atp_options(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("atp method (Why3's automatic provers on VC benchmarks)")
    group.add_argument(
        "--atp-budget",
        type=positive(float),
        default=10.0,
        metavar="SECONDS",
        help="wall-clock budget of the strategy on each VC (default %(default)s)",
    )
    group.add_argument(
        "--atp-strategy",
        choices=atp.STRATEGIES,
        default="auto3",
        help="auto3: shaped as Why3's Auto_level_3 over all the provers (all at 1 s, "
        "split_vc, all at 5 s, introduce_premises + inline_goal + split_all_full, all at "
        "30 s; each capped by the budget); flat: one call of all provers (default %(default)s)",
    )
    group.add_argument(
        "--atp-prover",
        action="append",
        default=[],
        metavar="NAME",
        help="a prover as Why3 names it (CVC5, CVC4, Z3, Eprover, Spass; repeatable; "
        "default: all installed)",
    )


def run(args: argparse.Namespace) -> int:
    if args.method == atp.METHOD:
        return run_atp(args)
    if args.timeout_map is not None or args.timeouts is not None:
        say("warning: --timeout-map and --timeouts are not used: each tactic has --tactic-timeout")
    opts = BaselineOptions(
        problems=args.problems,
        out=args.out,
        method=args.method,
        tactic_timeout=args.tactic_timeout,
        problem_timeout=args.problem_timeout,
        settings=checker_settings(args),
        selection=selection(args),
    )
    solves = run_baseline(opts)
    print(solve_table(solves))
    problems = load_benchmark(opts.problems, opts.selection).problems
    for name in sorted({registry.canonical(p.prover) for p in problems}):
        mine = [p for p in problems if registry.canonical(p.prover) == name]
        for note in registry.backend(name).baseline_notes(args.method, mine, opts.settings):
            say(note)
    unchecked = sum(not s.checked for s in solves)
    if unchecked:
        say(f"{unchecked} problems have unchecked tactics: re-run to finish them")
    say(f"closed by: {closers(solves)}")
    say(f"results: {opts.out / CSV_NAME}, {opts.out / 'results.csv'}")
    return 0


def run_atp(args: argparse.Namespace) -> int:
    opts = atp.AtpOptions(
        bench=args.problems,
        out=args.out,
        budget=args.atp_budget,
        strategy=args.atp_strategy,
        provers=tuple(args.atp_prover),
    )
    solves = atp.run_atp(opts)
    print(solve_table(solves))
    say(f"closed by: {closers(solves)}")
    say(f"results: {opts.out / CSV_NAME}, {opts.out / 'results.csv'}")
    return 0
