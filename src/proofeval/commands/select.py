"""proofeval select: a subset of a VC benchmark with a target automatic pass rate and
balanced categories, as NTP4VC chose its final set (about 22% closed by Auto_level_3)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import shutil
from pathlib import Path

from proofeval.baselines.run import CSV_NAME
from proofeval.commands.options import positive
from proofeval.console import say
from proofeval.errors import InputError, read_text
from proofeval.files import write_text_atomically
from proofeval.loaders import why3_vcs
from proofeval.report.table import format_grid


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "select",
        help="pick a subset of a VC benchmark with a target automatic pass rate",
        description="From each category, draw (reproducibly, with --seed) problems the atp "
        "baseline closed and problems it did not, in the proportion --target-pass, as many "
        "as the category allows (or --per-category); write them as a new benchmark.",
    )
    p.add_argument("bench", type=Path, help="a benchmark `build why3` wrote")
    p.add_argument(
        "--atp",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help=f"the run directory of `baseline BENCH --method atp` (its {CSV_NAME})",
    )
    p.add_argument(
        "--target-pass",
        type=_fraction,
        required=True,
        metavar="RATE",
        help="the fraction of the subset the provers closed, 0 to 1 (NTP4VC: 0.22)",
    )
    p.add_argument(
        "--per-category",
        type=positive(int),
        metavar="N",
        help="at most N problems per category (default: as many as the rate allows)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    p.add_argument("--out", type=Path, required=True, metavar="SUBSET", help="new benchmark")
    p.set_defaults(handler=run)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {text}")
    return value


def read_solved(run_dir: Path) -> dict[str, bool]:
    """problem id -> closed by the provers, from a baseline's baseline.csv."""
    path = run_dir / CSV_NAME
    rows = list(csv.DictReader(read_text(path).splitlines()))
    if not rows or not {"problem_id", "solved"} <= set(rows[0]):
        raise InputError(f"{path}: expected the columns problem_id and solved")
    return {row["problem_id"]: row["solved"] == "1" for row in rows}


def sizes(solved: int, unsolved: int, rate: float, cap: int | None) -> tuple[int, int]:
    """(closed, not closed) to take from a category: the largest total n (at most `cap`)
    whose rate * n closed (rounded) and n - that not closed the category has."""
    best = (0, 0)
    limit = solved + unsolved if cap is None else min(cap, solved + unsolved)
    for n in range(1, limit + 1):
        take = math.floor(rate * n + 0.5)  # rounded half up
        if take <= solved and n - take <= unsolved:
            best = (take, n - take)
    return best


def choose(
    entries: list[dict], solved: dict[str, bool], rate: float, cap: int | None, seed: int
) -> list[dict]:
    """The entries chosen, in the benchmark's order."""
    rng = random.Random(seed)
    by_category: dict[str, list[dict]] = {}
    for entry in entries:
        by_category.setdefault(entry["category"], []).append(entry)
    chosen: set[str] = set()
    for category in sorted(by_category):
        group = by_category[category]
        closed = [e["id"] for e in group if solved[e["id"]]]
        other = [e["id"] for e in group if not solved[e["id"]]]
        take, leave = sizes(len(closed), len(other), rate, cap)
        chosen |= set(rng.sample(closed, take)) | set(rng.sample(other, leave))
    return [e for e in entries if e["id"] in chosen]


def run(args: argparse.Namespace) -> int:
    if not why3_vcs.is_why3_vcs(args.bench):
        raise InputError(f"{args.bench}: not a benchmark `build why3` wrote")
    if args.out.exists():
        raise InputError(f"{args.out}: exists: give a new --out")
    manifest = why3_vcs.manifest(args.bench)
    solved = read_solved(args.atp)
    missing = [e["id"] for e in manifest["problems"] if e["id"] not in solved]
    if missing:
        raise InputError(
            f"{args.atp / CSV_NAME} has no result for {len(missing)} problems (first: "
            f"{missing[0]}): run the atp baseline on this benchmark to the end"
        )
    chosen = choose(manifest["problems"], solved, args.target_pass, args.per_category, args.seed)
    if not chosen:
        raise InputError("no problem can be chosen at this rate")
    _write(args, manifest, chosen, solved)
    print(_table(chosen, solved))
    say(f"wrote {args.out}")
    return 0


def _write(args: argparse.Namespace, manifest: dict, chosen: list[dict], solved) -> None:
    args.out.mkdir(parents=True)
    for entry in chosen:
        target = args.out / entry["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.bench / entry["file"], target)
    shutil.copyfile(args.bench / "_CoqProject", args.out / "_CoqProject")
    closed = sum(solved[e["id"]] for e in chosen)
    selection = {
        "from": str(args.bench),
        "atp_run": str(args.atp),
        "target_pass": args.target_pass,
        "pass": closed / len(chosen),
        "per_category": args.per_category,
        "seed": args.seed,
    }
    subset = manifest | {"problems": chosen, "selection": selection}
    write_text_atomically(args.out / why3_vcs.MANIFEST, json.dumps(subset, indent=1) + "\n")


def _table(chosen: list[dict], solved: dict[str, bool]) -> str:
    lines = [("Category", "Chosen", "ATP closed", "ATP pass")]
    for name in [*sorted({e["category"] for e in chosen}), "Total"]:
        group = [e for e in chosen if name in ("Total", e["category"])]
        closed = sum(solved[e["id"]] for e in group)
        lines.append((name, str(len(group)), str(closed), f"{100.0 * closed / len(group):.1f}%"))
    return format_grid(lines)
