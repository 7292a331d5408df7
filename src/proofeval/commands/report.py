"""proofeval report: a run's table with pass@k, as text, JSON, CSV or an HTML page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofeval.console import say
from proofeval.errors import InputError
from proofeval.files import write_text_atomically
from proofeval.grading.store import is_grading_run
from proofeval.report.category_csv import write_category_csv
from proofeval.report.json_report import comparison_document, dumps, run_document
from proofeval.report.rounds import agent_summary, format_agent, format_rounds, load_rounds
from proofeval.report.run_data import load_run
from proofeval.report.terminal import format_comparison, format_run

STDOUT = "-"


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="report a run: per-category table with pass@k, JSON, CSV, HTML",
        description="Print the per-category table of a run directory (the paper layout, with "
        "a pass@k column for each k its samples allow), or compare two runs side by side. "
        "pass@k is the unbiased estimator averaged over problems; pass@1 is avg-of-n with "
        "the standard error over problems; unchecked attempts count in neither n nor c. "
        "On a run of `proofeval grade`, the grading metrics instead (docs/grading.md "
        "defines them), as text, --json or --html.",
    )
    p.add_argument("run", type=Path, metavar="RUN_DIR", help="a run directory (with its store)")
    p.add_argument(
        "other",
        type=Path,
        nargs="?",
        metavar="RUN_DIR2",
        help="a second run directory: compare A=RUN_DIR and B=RUN_DIR2 (differences are B-A)",
    )
    p.add_argument(
        "--json",
        nargs="?",
        const=STDOUT,
        type=str,
        metavar="FILE",
        help="the report as a JSON document: printed instead of the table, or written to FILE "
        "(write --json=FILE, or put --json FILE after the run directories)",
    )
    p.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="write per-category rows (counts, shares, pass@1 with its standard error, pass@k) "
        "to FILE, one block of rows per run",
    )
    p.add_argument(
        "--html",
        type=Path,
        metavar="DIR",
        help="write a self-contained page to DIR/index.html: tables, pictures, and every "
        "problem's prompt, answers and verdicts",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if is_grading_run(args.run) or (args.other is not None and is_grading_run(args.other)):
        return report_grading(args)
    runs = [load_run(args.run)]
    if args.other is not None:
        runs.append(load_run(args.other))
    if args.json is not None:
        doc = run_document(runs[0]) if len(runs) == 1 else comparison_document(*runs)
        if args.json == STDOUT:
            sys.stdout.write(dumps(doc))
        else:
            write_text_atomically(Path(args.json), dumps(doc))
            say(f"wrote {args.json}")
    if args.json != STDOUT:
        print(format_run(runs[0]) if len(runs) == 1 else format_comparison(*runs))
        if len(runs) == 1:
            for arm in runs[0].every_arm():
                print_rounds(arm.path, "" if not runs[0].arms else f"arm {arm.arm}: ")
    if args.csv is not None:
        # a block of rows per run, or per arm of one run (never pooled); `run` names it
        write_category_csv(runs if len(runs) > 1 else runs[0].every_arm(), args.csv)
        say(f"wrote {args.csv}")
    if args.html is not None:
        # Imported here: matplotlib takes a while to load, and only the page needs it.
        from proofeval.report.html import write_html

        say(f"wrote {write_html(runs, args.html)}")
    return 0


def print_rounds(run_dir: Path, label: str = "") -> None:
    """The per-round table of a repair run, the agent's spending of an agentic one;
    `label` names the arm."""
    if any(s.round > 0 for s in load_rounds(run_dir)):
        print(label + format_rounds(load_rounds(run_dir)))
    if agent_summary(run_dir) is not None:
        print(label + format_agent(run_dir))


def report_grading(args: argparse.Namespace) -> int:
    """One grading run's report, or two side by side (grading/report.py, grading/compare.py):
    text, JSON, and a page with the curve and per-proof views."""
    from proofeval.grading import compare, report

    if args.csv is not None:
        raise InputError(f"{args.run}: a grading run is reported as text, JSON or HTML")
    paths = [args.run] if args.other is None else [args.run, args.other]
    for path in paths:
        if not is_grading_run(path):
            raise InputError(f"{path}: not a grading run; compare grading runs with each other")
    runs = [report.load_grading_run(path) for path in paths]
    docs = [report.document(run) for run in runs]
    if len(runs) == 1:
        doc, text = docs[0], report.format_text(docs[0])
    else:
        same = {i.id for i in runs[0].items} == {i.id for i in runs[1].items}
        doc = compare.comparison_document(docs[0], docs[1], same)
        text = compare.format_comparison(doc)
    if args.json == STDOUT:
        sys.stdout.write(report.dumps(doc))
    else:
        if args.json is not None:
            write_text_atomically(Path(args.json), report.dumps(doc))
            say(f"wrote {args.json}")
        print(text)
    if args.html is not None:
        from proofeval.grading.html import write_grading_html

        labelled = list(zip(("A", "B"), runs, docs, strict=False))
        say(f"wrote {write_grading_html(labelled, args.html, text)}")
    return 0
