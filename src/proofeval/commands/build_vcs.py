"""proofeval build why3: verification-condition benchmarks (the options and the run;
`build` dispatches here)."""

from __future__ import annotations

import argparse
from collections import Counter

from proofeval.builders import frama_c, why3_vcs
from proofeval.console import say
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark
from proofeval.provers.registry import benchmark_warnings

KINDS = ("why3", "frama-c")
SHOWN = 5  # skipped sources named in the summary


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--complicate",
        action="store_true",
        help="why3: erase assert annotations, lemma declarations and lemma functions with "
        "their applications from each source before generating VCs, as NTP4VC does (goals "
        "that disappear with them are not problems; why3-vcs.json records per problem what "
        "was erased)",
    )
    p.add_argument(
        "--split",
        choices=["function", "goal"],
        default="function",
        help="why3: one problem per function VC, as NTP4VC poses them (default), or per goal "
        "after Why3's split_vc (ids get .<n>)",
    )


def run(args: argparse.Namespace) -> int:
    categories = why3_vcs.load_category_map(args.categories)
    if args.prover == "frama-c":
        if args.complicate or args.split != "function":
            raise InputError("--complicate and --split are for why3 sources only")
        built = frama_c.build(list(args.sources), args.out, categories)
    else:
        built = why3_vcs.build(
            list(args.sources),
            args.out,
            categories,
            split_goals=args.split == "goal",
            complicated=args.complicate,
        )
    per_category = Counter(p["category"] for p in built.problems)
    shown = ", ".join(f"{c} {n}" for c, n in sorted(per_category.items()))
    say(f"{len(built.problems)} verification conditions ({shown})")
    for warning in benchmark_warnings(load_benchmark(args.out).problems):
        say(f"warning: {warning}")
    if built.skipped:
        names = ", ".join(s["source"] for s in built.skipped[:SHOWN])
        more = f" and {len(built.skipped) - SHOWN} more" if len(built.skipped) > SHOWN else ""
        say(
            f"{len(built.skipped)} sources skipped ({names}{more}): the reasons are in "
            f"{args.out / why3_vcs.MANIFEST}"
        )
    say(f"wrote {args.out}")
    return 0
