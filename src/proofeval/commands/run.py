"""proofeval run: generate and check in one stream, resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.agent import add_agent_options, agent_procedure, run_agentic
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
from proofeval.loaders import load_benchmark
from proofeval.provers.registry import supported
from proofeval.report.rounds import format_agent, format_rounds, load_rounds
from proofeval.report.run_data import load_run
from proofeval.report.table import write_results_csv
from proofeval.report.terminal import format_run
from proofeval.runs import manifest
from proofeval.runs.agent import TRANSCRIPTS
from proofeval.runs.arms import arm_dir, refuse_other_problems
from proofeval.runs.repair import RepairOptions, run_with_repairs
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.store import RunStore, named_arms


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
    p.add_argument(
        "--arm",
        metavar="NAME",
        help="a new arm of the run in RUN_DIR: the same problems asked of another model or "
        "under another setting, kept in RUN_DIR/arms/NAME with its own settings and reported "
        "beside the run's other arms, never pooled with them (default: the run's own arm)",
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


def arm_out(args: argparse.Namespace) -> Path:
    """The directory of the arm asked for (RUN_DIR for the default one), once it is sure
    that the arm's problems are those of the run's other arms."""
    if args.arm or named_arms(args.out):
        problems = load_benchmark(args.problems, selection(args)).problems
        ids = [p.id for p in problems if p.prover in supported()]
        refuse_other_problems(args.out, args.arm, ids)
    return arm_dir(args.out, args.arm)


def run(args: argparse.Namespace) -> int:
    if args.agent and args.rounds:
        raise InputError("--agent and --rounds do not combine: an agent repairs by itself")
    out = arm_out(args)
    procedure = (
        agent_procedure(args) if args.agent else manifest.repair(args.rounds, args.repair_template)
    )
    opts = RunOptions(
        problems=args.problems,
        out=out,
        sampling=sampling_settings(args),
        template=args.template,
        extraction=extraction(args),
        timeout=args.timeout,
        timeout_map=args.timeout_map,
        timeouts=args.timeouts,
        settings=checker_settings(args),
        command=tuple(getattr(args, "argv", ())),
        selection=selection(args),
        procedure=procedure,
    )
    if args.agent:
        run_agentic(args, opts)
        store = RunStore(out)
        try:
            write_results_csv(store.results(), out / "results.csv")
        finally:
            store.close()
        print(format_run(load_run(args.out)))
        print(format_agent(out))
        say(f"results: {out / 'results.csv'}, transcripts: {out / TRANSCRIPTS}")
        return 0
    if args.rounds:
        repair = RepairOptions(args.rounds, opts.sampling, opts.extraction, args.repair_template)
        with judge_for(args) as (judge, warm):
            run_with_repairs(opts, repair, judge, warm)
    else:
        run_pipeline(opts)
    print(format_run(load_run(args.out)))
    if args.rounds:
        print(format_rounds(load_rounds(out)))
    say(f"results: {out / 'results.csv'}, answers: {out / 'answers.jsonl'}")
    return 0
