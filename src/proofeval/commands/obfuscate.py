"""proofeval obfuscate: reprint every query with the types of its variables and constants."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from proofeval.builders.obfuscate import obfuscate
from proofeval.commands.options import add_hol_light_option
from proofeval.commands.warm import hol_core
from proofeval.console import say
from proofeval.errors import InputError, read_text
from proofeval.loaders import load_benchmark
from proofeval.loaders.s2n_official import PROBLEMS
from proofeval.provers.backend import SharedProcess

OBFUSCATED = "problems-obfuscated.json"
UNOBFUSCATED = "problems-unobfuscated.json"


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "obfuscate",
        help="reprint each query with full type annotations",
        description="Reprint every query, in its own context, with the type of every variable "
        "and constant; keep a new text only when it parses back to an alpha-equivalent term. "
        f"Writes {OBFUSCATED} beside problems.json; --in-place makes it problems.json (the "
        f"original kept as {UNOBFUSCATED}) and rewrites each <id>/query.txt.",
    )
    p.add_argument("problems", type=Path, help="a benchmark directory with problems.json")
    p.add_argument("--in-place", action="store_true", help="replace the queries of BENCH")
    add_hol_light_option(p)
    p.add_argument("--no-sandbox", action="store_true", help="run HOL Light without bubblewrap")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, base: SharedProcess | None = None) -> int:
    """`base`: a warm HOL Light core (default: start one)."""
    bench_dir: Path = args.problems
    source = bench_dir / PROBLEMS
    if not source.is_file():
        raise InputError(f"{bench_dir}: obfuscate needs a benchmark directory with {PROBLEMS}")
    if args.in_place and (bench_dir / UNOBFUSCATED).exists():
        raise InputError(f"{bench_dir / UNOBFUSCATED} exists: the queries are obfuscated already")
    problems = load_benchmark(bench_dir).problems
    with (
        hol_core(args.hol_light, not args.no_sandbox, base) as core,
        tqdm(total=len(problems), unit="query", desc="obfuscating", file=sys.stderr) as bar,
    ):
        results = obfuscate(problems, core, lambda _r: bar.update())
    entries = json.loads(read_text(source))
    done = 0
    for r in results:
        if r.query is None:
            say(f"{r.problem_id}: kept as it was: {r.reason}")
            continue
        entries[r.problem_id]["query"] = r.query
        done += 1
        if args.in_place and (bench_dir / r.problem_id / "query.txt").is_file():
            (bench_dir / r.problem_id / "query.txt").write_text(r.query + "\n")
    text = json.dumps(entries, indent=2) + "\n"
    if args.in_place:
        source.rename(bench_dir / UNOBFUSCATED)
        source.write_text(text)
    else:
        (bench_dir / OBFUSCATED).write_text(text)
    share = 100.0 * done / len(results)
    say(f"obfuscated {done} of {len(results)} queries ({share:.1f}%)")
    return 0
