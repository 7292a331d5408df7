"""proofeval problems: list a benchmark's problems, or export them as CSV."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.errors import InputError
from proofeval.loaders import load_benchmark, skipped_summary

COLUMNS = ("problem_id", "category", "query")


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "problems",
        help="list a benchmark's problems (id, category), or export them as CSV",
        description="Print each problem's id and category, one a line; with --csv, write "
        "problem_id,category,query rows (the official answers CSV without its answer column).",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    p.add_argument(
        "--category",
        action="append",
        metavar="C",
        help="only problems of this category (repeatable)",
    )
    p.add_argument("--csv", type=Path, metavar="FILE", help="write the problems as CSV")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    bench = load_benchmark(args.problems, selection(args))
    skipped = skipped_summary(bench)
    if skipped is not None:
        print(f"proofeval: warning: {skipped}", file=sys.stderr)
    problems = bench.problems
    if args.category:
        known = {p.category for p in problems}
        unknown = sorted(set(args.category) - known)
        if unknown:
            raise InputError(f"no problems of category {unknown} (categories: {sorted(known)})")
        problems = [p for p in problems if p.category in args.category]
    if args.csv is None:
        for p in problems:
            print(f"{p.id}\t{p.category}")
        return 0
    with args.csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows((p.id, p.category, p.statement) for p in problems)
    print(f"proofeval: wrote {len(problems)} problems to {args.csv}", file=sys.stderr)
    return 0
