"""proofeval validate: does each statement of a benchmark elaborate in its context?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from proofeval.commands.bench_options import BENCH_HELP, add_benchmark_options, selection
from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.report.table import format_grid
from proofeval.runs.validate import (
    ELABORATES,
    VALID_LIST,
    Health,
    ValidateOptions,
    by_cause,
    document,
    validate,
)

SHOWN_IDS = 3
SHOWN_WIDTH = 80


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check that every statement of a benchmark elaborates in its context",
        description="Type-check each statement in its context with the real prover (Coq: "
        "the statement after its header; HOL Light: the goal in its context), in parallel "
        "and resumable, and group those that fail by cause (missing library, Rocq 9 "
        "syntax, type error, timeout). With --reference, also check the reference proofs. "
        f"Writes RUN_DIR/{VALID_LIST}, the ids that elaborate (for --only @FILE). Exit "
        "status 1 when a statement does not elaborate or a reference proof is not OK.",
    )
    p.add_argument("problems", type=Path, help=BENCH_HELP)
    add_benchmark_options(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help=f"run directory: SQLite store (a re-run resumes), {VALID_LIST}",
    )
    p.add_argument(
        "--reference", action="store_true", help="also check the benchmark's reference proofs"
    )
    p.add_argument("--json", action="store_true", help="print a JSON document, not a table")
    add_checker_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    opts = ValidateOptions(
        problems=args.problems,
        out=args.out,
        selection=selection(args),
        reference=args.reference,
        timeout=args.timeout,
        settings=checker_settings(args),
    )
    health = validate(opts)
    if args.json:
        print(json.dumps(document(args.problems.name, health), indent=2, ensure_ascii=False))
    else:
        print(format_health(health))
    bad_reference = any(h.reference not in (None, "OK") for h in health)
    return 1 if bad_reference or any(h.status != ELABORATES for h in health) else 0


def format_health(health: list[Health]) -> str:
    """The summary table by cause, then one line per statement that does not elaborate."""
    groups = by_cause(health)
    good = sum(h.status == ELABORATES for h in health)
    lines = [("Status", "Statements", "e.g.")]
    lines.append(("elaborates", str(good), _ids([h for h in health if h.status == ELABORATES])))
    lines += [(name, str(len(hs)), _ids(hs)) for name, hs in groups.items()]
    lines.append(("Total", str(len(health)), ""))
    parts = [format_grid(lines)]
    failing = [h for hs in groups.values() for h in hs]
    if failing:
        parts += ["", *(f"{h.problem_id}: {h.status}: {h.message}" for h in failing)]
    references = [h for h in health if h.reference is not None]
    if references:
        ok = sum(h.reference == "OK" for h in references)
        parts += ["", f"reference proofs: {ok} of {len(references)} OK"]
        parts += [
            f"{h.problem_id}: reference {h.reference}: {h.reference_message}"
            for h in references
            if h.reference != "OK"
        ]
    return "\n".join(parts)


def _ids(health: list[Health]) -> str:
    ids = ", ".join(h.problem_id for h in health[:SHOWN_IDS])
    if len(ids) > SHOWN_WIDTH:  # long ids (NTP4VC's paths): the lines below name them all
        return ids[: SHOWN_WIDTH - 3] + "..."
    return ids + (", ..." if len(health) > SHOWN_IDS else "")
