"""proofeval run: generate and check in one stream, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.agent import add_agent_options, run_agentic
from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.generate import (
    add_extraction_options,
    add_sampling_options,
    extraction,
    sampling_settings,
)
from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.commands.repair_judge import judge_for
from proofeval.console import say
from proofeval.errors import InputError
from proofeval.report.rounds import format_agent, format_rounds, load_rounds
from proofeval.report.run_data import load_run
from proofeval.report.table import write_results_csv
from proofeval.report.terminal import format_run
from proofeval.runs.agent import TRANSCRIPTS
from proofeval.runs.repair import RepairOptions, run_with_repairs
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.store import RunStore


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
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
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
    add_repair_options(p)
    add_agent_options(p)
    p.set_defaults(handler=run)


def add_repair_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("repair rounds")
    g.add_argument(
        "--rounds",
        type=non_negative_int,
        default=0,
        metavar="R",
        help="send each attempt that is not OK back to the model with its verdict and the "
        "checker's feedback (goals left, the failing step), up to R times per sample; "
        "re-running with a larger R continues a finished run (default %(default)s: none)",
    )
    g.add_argument(
        "--repair-template",
        metavar="FILE",
        help="a Jinja2 file for the repair prompt (default: the built-in 'repair'; its "
        "variables are listed in docs/evaluate.md)",
    )


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


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
        command=tuple(getattr(args, "argv", ())),
        selection=selection(args),
    )
    if args.agent:
        if args.rounds:
            raise InputError("--agent and --rounds do not combine: an agent repairs by itself")
        run_agentic(args, opts.sampling)
        store = RunStore(args.out)
        try:
            write_results_csv(store.results(), args.out / "results.csv")
        finally:
            store.close()
        print(format_run(load_run(args.out)))
        print(format_agent(args.out))
        say(f"results: {args.out / 'results.csv'}, transcripts: {args.out / TRANSCRIPTS}")
        return 0
    if args.rounds:
        repair = RepairOptions(args.rounds, opts.sampling, opts.extraction, args.repair_template)
        with judge_for(args) as (judge, warm):
            run_with_repairs(opts, repair, judge, warm)
    else:
        run_pipeline(opts)
    print(format_run(load_run(args.out)))
    if args.rounds:
        print(format_rounds(load_rounds(args.out)))
    say(f"results: {args.out / 'results.csv'}, answers: {args.out / 'answers.jsonl'}")
    return 0
