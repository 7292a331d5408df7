"""proofeval prompts: show the prompt each problem would be given, or write one file each."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.generate import add_template_option
from proofeval.errors import InputError
from proofeval.generate.prompts import render
from proofeval.loaders import load_benchmark


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prompts",
        help="render the prompt of each problem of a benchmark",
        description="Render each problem's prompt as `proofeval generate` would send it: to "
        "standard output, each after a line `===== <problem id> =====`, or with --out as "
        "one file <problem id>.txt each.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    add_template_option(p)
    p.add_argument(
        "--problem",
        action="append",
        metavar="ID",
        help="only this problem (repeatable)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write DIR/<problem id>.txt files instead of printing",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    problems = load_benchmark(args.problems, selection(args)).problems
    if args.problem:
        unknown = sorted(set(args.problem) - {p.id for p in problems})
        if unknown:
            raise InputError(f"no such problem in {args.problems}: {', '.join(unknown)}")
        problems = [p for p in problems if p.id in args.problem]
    if args.out is None:
        for p in problems:
            print(f"===== {p.id} =====")
            print(render(args.template, p).rstrip("\n"))
        return 0
    prompts = [(file_name(p.id), render(args.template, p)) for p in problems]
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, prompt in prompts:
            (args.out / name).write_text(prompt, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{args.out}: cannot write prompts: {exc.strerror}") from None
    print(f"proofeval: wrote {len(problems)} prompts to {args.out}", file=sys.stderr)
    return 0


def file_name(problem_id: str) -> str:
    """`<id>.txt`, with any path separator in the id replaced, so files stay inside DIR."""
    safe = problem_id.replace("/", "_").replace("\\", "_").replace("\0", "_")
    return f"{'_' + safe if safe.startswith('.') else safe}.txt"
