"""proofeval check: check proof attempts against a benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.runs.check import CheckOptions, check_and_print


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="check proof attempts against a benchmark",
        description="Check every attempt in a warm, sandboxed prover; one verdict per attempt "
        "(OK, FAIL, CHEATING, TIMEOUT, ERROR). Re-running on the same --out resumes.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--answers",
        type=Path,
        metavar="FILE",
        help="answers as CSV (problem_id,answer columns) or JSONL ({problem_id, answer}); "
        "default: the answer.txt files of the problems directory",
    )
    source.add_argument(
        "--reference",
        action="store_true",
        help="check the benchmark's own reference proofs instead of answers",
    )
    p.add_argument(
        "--allow-unknown",
        action="store_true",
        help="check the answers whose problem id the benchmark has, and only warn about the "
        "others (default: answers for unknown ids are an error, as a misspelt id would "
        "leave its problem unanswered)",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run directory: SQLite store, results.csv",
    )
    p.add_argument(
        "--official-csv",
        type=Path,
        metavar="FILE",
        help="also write the s2n-bignum-bench results CSV (Problem,Verdict)",
    )
    add_checker_options(p)
    p.add_argument(
        "--feedback",
        choices=["on", "off"],
        default="off",
        help="after checking, give each FAIL structured feedback a model can repair from: "
        "the goals left, or the step that failed and its goals (bounded in size), found "
        "through proof states (HOL Light, Coq); kept in the store and written to "
        "RUN_DIR/feedback.jsonl and `report --json`. It costs about one more check per "
        "FAIL (default %(default)s: nothing extra)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="check on the nodes of this Ray cluster (host:port of its head, or 'auto'); "
        "each node uses its own cores as workers; needs proofeval[ray]",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    remote = None
    if args.ray is not None:  # Ray is imported only when asked for: it is slow to import
        from proofeval.scale.ray_cluster import on_cluster

        remote = on_cluster(args.ray)
    opts = CheckOptions(
        problems=args.problems,
        answers=args.answers,
        out=args.out,
        timeout=args.timeout,
        timeout_map=args.timeout_map,
        timeouts=args.timeouts,
        official_csv=args.official_csv,
        reference=args.reference,
        settings=checker_settings(args),
        remote=remote,
        selection=selection(args),
        allow_unknown=args.allow_unknown,
        feedback=args.feedback == "on",
    )
    return check_and_print(opts)
