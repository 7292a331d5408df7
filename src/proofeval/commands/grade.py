"""proofeval grade: grade informal proofs with a language model, resumably."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.generate import (
    add_endpoint_options,
    endpoint_settings,
    non_negative_int,
)
from proofeval.commands.options import positive
from proofeval.console import say
from proofeval.generate.client import SamplingSettings
from proofeval.grading.report import document as report_document
from proofeval.grading.report import format_text, load_grading_run
from proofeval.grading.run import GradeOptions, run_grading


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grade",
        help="grade informal proofs (Hard2Verify, ProcessBench, arXiv papers) with an LLM judge",
        description="Grade every proof or paper of DATA --runs times with a method: "
        "'baseline' (one judge call reads the whole proof) or 'pf' (pseudo-formalisation: "
        "rewrite into modules, check the rewrite is faithful, verify each module on its own, "
        "map the flags back to the proof's steps or the paper's results). Every call is kept "
        "in RUN_DIR as it arrives: re-running the same command asks only for what is missing. "
        "Prints the metrics at the end; `proofeval report RUN_DIR` prints them again "
        "(docs/grading.md defines each).",
    )
    p.add_argument(
        "data",
        type=Path,
        metavar="DATA",
        help="Hard2Verify JSONL or JSON (encrypted or not) or its Hugging Face cache "
        "directory; ArxivMathGradingBench-style JSONL (papers: --papers); ProcessBench or "
        "generic {problem, proof, steps?, labels?} JSONL; a directory of papers (PDF or "
        "text); or a grading_full_output.json to score (no model calls but matching)",
    )
    p.add_argument(
        "--method",
        choices=("baseline", "pf"),
        default="baseline",
        help="baseline judge or pseudo-formalisation (default %(default)s)",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run directory: the SQLite store (resumable) and grading_full_output.json",
    )
    p.add_argument(
        "--runs",
        type=positive(int),
        default=1,
        metavar="N",
        help="independent gradings of each item, for precision/recall at k=1..N (default 1)",
    )
    p.add_argument(
        "--papers",
        type=Path,
        metavar="DIR",
        help="where the papers of arXiv rows are (arXiv-<id><version>.pdf, <id>.pdf, "
        "<id>.txt, ...; default: the directory of DATA)",
    )
    p.add_argument(
        "--pf-retries",
        type=non_negative_int,
        default=2,
        metavar="N",
        help="pf: rewrites asked again, with the errors found, when a rewrite does not "
        "parse or is not faithful (default %(default)s)",
    )
    add_endpoint_options(p.add_argument_group("model"), model_required=False)
    p.set_defaults(handler=run)


def sampling(args: argparse.Namespace) -> SamplingSettings | None:
    if args.model is None:
        return None
    return endpoint_settings(args)


def run(args: argparse.Namespace) -> int:
    opts = GradeOptions(
        data=args.data,
        out=args.out,
        method=args.method,
        runs=args.runs,
        sampling=sampling(args),
        papers=args.papers,
        pf_retries=args.pf_retries,
    )
    full_output = run_grading(opts)
    print(format_text(report_document(load_grading_run(args.out))))
    say(f"grading_full_output.json: {full_output}")
    return 0
