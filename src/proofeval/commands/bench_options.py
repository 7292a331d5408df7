"""The options every command that reads a benchmark shares: how to read and select it."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.options import positive
from proofeval.loaders import LAYOUTS, Selection

BENCH_HELP = f"the benchmark: {LAYOUTS}"


def add_benchmark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--manifest",
        type=Path,
        metavar="FILE",
        help="a list of the Rocq tree's case files (one path a line, or a JSON list), of any "
        "name; paths relative to the benchmark directory",
    )
    p.add_argument(
        "--only",
        action="append",
        metavar="PATTERN",
        help="only the problems whose id matches: ids or globs (putnam_19*), comma-separated "
        "or repeated, or @FILE of them one a line (a Rocq case may be named by its .v file, as "
        "NTP4VC's test_set.rocq.lst names them); a pattern that matches nothing is an error",
    )
    p.add_argument(
        "--limit",
        type=positive(int),
        metavar="N",
        help="only the first N problems (after --only), in the benchmark's order",
    )
    p.add_argument(
        "--categories",
        default="directory",
        metavar="SCHEME",
        help="for a plain Rocq tree: a case's category is its first directory (directory, "
        "the default), the year in its id (year), the first non-standard library its header "
        "imports (library), or the first group of a regular expression searched in its id",
    )


def selection(args: argparse.Namespace) -> Selection:
    return Selection(args.manifest, tuple(args.only or ()), args.categories, args.limit)
