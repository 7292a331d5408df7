"""The `proofeval` command line."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path

from proofeval.check_run import CheckOptions, print_table, run_check, say
from proofeval.errors import InputError
from proofeval.provers.hol_light.pool import CheckSettings
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, CheckerError


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    return parse


def _add_checker_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("checking")
    g.add_argument(
        "--workers",
        type=_positive(int),
        default=os.cpu_count() or 1,
        help="attempts checked in parallel (default: the number of cores, %(default)s)",
    )
    g.add_argument(
        "--timeout",
        type=_positive(float),
        default=120.0,
        help="seconds per attempt when neither timeout file names a limit (default %(default)s)",
    )
    g.add_argument(
        "--timeout-map",
        type=Path,
        metavar="FILE",
        help="per-problem limits: JSON list of {problem_id, timeout_sec} "
        "(default: timeout-map.json beside the problems)",
    )
    g.add_argument(
        "--timeouts",
        type=Path,
        metavar="FILE",
        help="per-category limits: JSON {category: seconds} "
        "(default: timeouts.json beside the problems)",
    )
    g.add_argument(
        "--memory-limit",
        type=_positive(int),
        default=4096,
        metavar="MB",
        help="address-space limit of each attempt in MiB (default %(default)s)",
    )
    g.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run HOL Light without bubblewrap (only where user namespaces are unavailable)",
    )
    g.add_argument(
        "--hol-light",
        type=Path,
        default=DEBIAN_HOL_LIGHT,
        metavar="DIR",
        help="HOL Light directory with hol.ml and its toplevel `ocaml` (default %(default)s)",
    )


def _settings(args: argparse.Namespace) -> CheckSettings:
    return CheckSettings(
        workers=args.workers,
        memory_mb=args.memory_limit,
        sandbox=not args.no_sandbox,
        hol_dir=args.hol_light,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="proofeval",
        description="Check machine-generated proofs in the real prover and report pass rates.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser(
        "check",
        help="check proof attempts against a benchmark",
        description="Check every attempt in a warm, sandboxed prover; one verdict per attempt "
        "(OK, FAIL, CHEATING, TIMEOUT, ERROR). Re-running on the same --out resumes.",
    )
    check.add_argument(
        "problems",
        type=Path,
        help="a directory in the s2n-bignum-bench layout (<id>/setup.ml, <id>/query.txt) "
        "or a .jsonl file of problems",
    )
    check.add_argument(
        "--answers",
        type=Path,
        metavar="FILE",
        help="answers as CSV (problem_id,answer columns) or JSONL ({problem_id, answer}); "
        "default: the answer.txt files of the problems directory",
    )
    check.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="run directory: SQLite store, results.csv",
    )
    check.add_argument(
        "--official-csv",
        type=Path,
        metavar="FILE",
        help="also write the s2n-bignum-bench results CSV (Problem,Verdict)",
    )
    _add_checker_options(check)

    demo = sub.add_parser(
        "demo",
        help="check the embedded demo benchmark and print the table",
        description="Check the sample answers of the embedded HOL Light benchmark "
        "(arithmetic, sets, lists, logic, bit vectors, a context with admitted lemmas).",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("demo-run"),
        metavar="RUN_DIR",
        help="run directory (default %(default)s; re-running resumes)",
    )
    _add_checker_options(demo)
    return parser


def _demo_file(name: str) -> Path:
    return Path(str(resources.files("proofeval") / "demo" / name))


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        opts = CheckOptions(
            problems=_demo_file("problems.jsonl"),
            answers=_demo_file("answers.jsonl"),
            out=args.out,
            timeout=args.timeout,
            timeout_map=args.timeout_map,
            timeouts=args.timeouts,
            settings=_settings(args),
        )
    else:
        opts = CheckOptions(
            problems=args.problems,
            answers=args.answers,
            out=args.out,
            timeout=args.timeout,
            timeout_map=args.timeout_map,
            timeouts=args.timeouts,
            official_csv=args.official_csv,
            settings=_settings(args),
        )
    rows = run_check(opts)
    print_table(rows)
    say(f"results: {opts.out / 'results.csv'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except InputError as exc:
        print(f"proofeval: error: {exc}", file=sys.stderr)
        return 2
    except CheckerError as exc:
        print(f"proofeval: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "proofeval: interrupted; finished verdicts are kept, re-run to resume", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
