"""proofeval demo: check the embedded benchmark's sample answers and print the table."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.runs.check import CheckOptions, check_and_print


def demo_file(name: str) -> Path:
    return Path(str(resources.files("proofeval") / "demo" / name))


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="check the embedded demo benchmark and print the table",
        description="Check the sample answers of the embedded benchmark: HOL Light problems "
        "(arithmetic, sets, lists, logic, bit vectors, a context with admitted lemmas) and "
        "Coq problems (arithmetic, lists, logic), in one run and one table.",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("demo-run"),
        metavar="RUN_DIR",
        help="run directory (default %(default)s; re-running resumes)",
    )
    add_checker_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    opts = CheckOptions(
        problems=demo_file("problems.jsonl"),
        answers=demo_file("answers.jsonl"),
        out=args.out,
        timeout=args.timeout,
        timeout_map=args.timeout_map,
        timeouts=args.timeouts,
        settings=checker_settings(args),
    )
    return check_and_print(opts)
