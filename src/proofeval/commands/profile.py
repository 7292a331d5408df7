"""proofeval profile: time the reference proofs and write timeout-map.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from proofeval.builders.profile import (
    TimeoutRule,
    time_references,
    timeout_map,
    write_timeout_map,
)
from proofeval.commands.bench_options import add_benchmark_options, selection
from proofeval.commands.options import add_checker_options, checker_settings, positive
from proofeval.console import say
from proofeval.loaders import load_benchmark
from proofeval.provers.backend import SharedProcess
from proofeval.timeouts import MAP_NAME, load_policy

RULE = TimeoutRule()


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="time the reference proofs and write timeout-map.json",
        description="Check every reference proof --runs times and write per-problem limits "
        "with s2n-bignum-bench's rule: under 60 s, 120 s; up to 120 s, twice the time; "
        "beyond, five times, capped at 10800 s. prove_secs (the median of the OK runs) is "
        "kept beside each timeout_sec.",
    )
    p.add_argument("problems", type=Path, help="a benchmark with reference proofs")
    add_benchmark_options(p)
    p.add_argument("--runs", type=positive(int), default=3, help="runs per proof (default 3)")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help=f"where to write the map (default: {MAP_NAME} in the benchmark directory)",
    )
    g = p.add_argument_group("the rule")
    for flag, value, text in (
        ("--short-below", RULE.short_below, "proofs faster than this (s) get --short-timeout"),
        ("--short-timeout", RULE.short_timeout, "their limit (s)"),
        ("--double-up-to", RULE.double_up_to, "proofs up to this (s) get --double-factor x"),
        ("--double-factor", RULE.double_factor, "that factor"),
        ("--long-factor", RULE.long_factor, "slower proofs get this factor"),
        ("--cap", RULE.cap, "no limit above this (s)"),
    ):
        g.add_argument(
            flag, type=positive(float), default=value, help=f"{text} (default {value:g})"
        )
    add_checker_options(p)
    p.set_defaults(handler=run, timeout=RULE.cap)


def run(args: argparse.Namespace, warm: dict[str, SharedProcess] | None = None) -> int:
    """`warm`: a ready process per prover to reuse (default: start them)."""
    bench = load_benchmark(args.problems, selection(args))
    policy = load_policy(args.problems, args.timeout_map, args.timeouts, args.timeout)
    rule = TimeoutRule(
        args.short_below,
        args.short_timeout,
        args.double_up_to,
        args.double_factor,
        args.long_factor,
        args.cap,
    )
    total = args.runs * sum(1 for p in bench.problems if p.reference)
    with tqdm(total=total, unit="run", desc="profiling", file=sys.stderr) as bar:
        timings = time_references(
            bench.problems, args.runs, policy, checker_settings(args), say, bar.update, warm
        )
    rows = timeout_map(timings, rule)
    for t in timings:
        if t.message:
            say(f"{t.problem_id}: {len(t.seconds)} of {len(t.verdicts)} runs OK; {t.message}")
    default = args.problems if args.problems.is_dir() else args.problems.parent
    out = args.out or default / MAP_NAME
    write_timeout_map(out, rows)
    say(f"wrote {out}: {len(rows)} of {len(timings)} problems timed")
    return 0 if len(rows) == len(timings) else 1
