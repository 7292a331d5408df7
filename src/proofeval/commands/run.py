"""proofeval run: generate and check in one stream, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.generate import (
    add_extraction_options,
    add_sampling_options,
    extraction,
    sampling_settings,
)
from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.console import say
from proofeval.report.run_data import load_run
from proofeval.report.terminal import format_run
from proofeval.runs.stream import RunOptions, run_pipeline


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="ask a model for proofs and check them as they arrive (generate + check)",
        description="Render a prompt per problem, ask an OpenAI-compatible endpoint for "
        "--samples completions each, extract the proof from each completion and check it in "
        "the warm, sandboxed prover while generation goes on. Every completion and verdict is "
        "committed to RUN_DIR as it arrives: re-running the same command generates and checks "
        "only what is missing. Prints the per-category table with pass@k at the end; "
        "`proofeval report RUN_DIR` prints it again, or as JSON, CSV or HTML.",
    )
    p.add_argument(
        "problems",
        type=Path,
        help="a benchmark: a directory in the s2n-bignum-bench layout or a .jsonl file",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run directory: the SQLite store (resumable), results.csv and answers.jsonl "
        "(each completion with its extracted answer and verdict as proof_status)",
    )
    add_sampling_options(p)
    add_extraction_options(p)
    add_checker_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    opts = RunOptions(
        problems=args.problems,
        out=args.out,
        sampling=sampling_settings(args),
        template=args.template,
        extraction=extraction(args),
        timeout=args.timeout,
        timeout_map=args.timeout_map,
        timeouts=args.timeouts,
        settings=checker_settings(args),
    )
    run_pipeline(opts)
    print(format_run(load_run(args.out)))
    say(f"results: {args.out / 'results.csv'}, answers: {args.out / 'answers.jsonl'}")
    return 0
