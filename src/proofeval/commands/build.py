"""proofeval build: make a benchmark from a verified development's sources."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofeval.builders.categories import OFFICIAL_RULES, load_rules
from proofeval.builders.hol_light import BuildOptions, build, expand_sources
from proofeval.commands import build_vcs
from proofeval.commands.options import add_hol_light_option
from proofeval.commands.warm import hol_core
from proofeval.console import say
from proofeval.loaders.s2n_official import BUILD_INFO
from proofeval.provers.backend import SharedProcess

SHOWN = 5  # problems named in the summary of those that repeat a goal


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build",
        help="build a benchmark from a verified development's sources",
        description="hol-light: every top-level `let NAME = prove(goal, tactic)` of the "
        "sources (loads inlined) becomes a problem, <group>.<file>.<NAME> with NAME as "
        "written (primes included): the goal is the query, the context everything before "
        "it with earlier proofs admitted by CHEAT_TAC, the tactic the hidden reference "
        "(references.jsonl). Writes the s2n-bignum-bench layout; the summary counts what "
        "was dropped or merged, and why. why3: every verification condition of WhyML "
        "programs becomes a Coq problem printed by Why3's Coq driver (see "
        "proofeval/builders/why3_vcs.py); frama-c: the same for the goals Frama-C's WP "
        "generates from annotated C and does not discharge itself (builders/frama_c.py).",
    )
    p.add_argument(
        "prover",
        choices=["hol-light", *build_vcs.KINDS],
        help="hol-light: HOL Light sources; why3: .mlw programs; frama-c: annotated .c files",
    )
    p.add_argument(
        "sources",
        type=Path,
        nargs="+",
        metavar="SOURCE",
        help="source files, or directories of .ml (.mlw, .c) files; for hol-light, under the root",
    )
    p.add_argument(
        "--out", type=Path, required=True, metavar="BENCH", help="the benchmark directory"
    )
    p.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="the development's root: loads resolve here, then in HOL Light's directory; "
        "ids are <first directory under it>.<file>.<NAME> (default: the current directory)",
    )
    p.add_argument(
        "--prelude",
        action="append",
        default=[],
        metavar="FILE",
        help="a file (under the root) loaded before each source, as a development's build "
        "loads its base; {group} stands for the source's group, so s2n-bignum's build is "
        "--prelude '{group}/proofs/base.ml' (repeatable)",
    )
    add_hol_light_option(p)
    p.add_argument(
        "--categories",
        type=Path,
        metavar="FILE",
        help="hol-light: category rules (JSON list, first match wins) instead of "
        "s2n-bignum-bench's; proofeval-build.json in BENCH shows the rules a build used. "
        "why3/frama-c: a JSON object from a source's name, path or glob to its category "
        "(default: the source's directory name)",
    )
    p.add_argument(
        "--no-setup-files",
        action="store_true",
        help="do not write <id>/setup.ml (each repeats a prefix of an ml_files/ file, which "
        "problems.json points to; a large development's take gigabytes)",
    )
    p.add_argument(
        "--merge-same-goal",
        action="store_true",
        help="as s2n-bignum-bench's collect-problems.py: a theorem whose goal (up to white "
        "space) an earlier problem states is not a problem of its own but one more location "
        "of that one (default: every binding is its own problem; the build names those that "
        "repeat a goal)",
    )
    p.add_argument("--no-sandbox", action="store_true", help="run HOL Light without bubblewrap")
    build_vcs.add_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, base: SharedProcess | None = None) -> int:
    """`base`: a warm HOL Light core to parse with (default: start one)."""
    if args.prover in build_vcs.KINDS:
        return build_vcs.run(args)
    rules = OFFICIAL_RULES if args.categories is None else load_rules(args.categories)
    opts = BuildOptions(
        sources=tuple(args.sources),
        out=args.out,
        root=args.root,
        hol_dir=args.hol_light,
        rules=rules,
        preludes=tuple(args.prelude),
        setup_files=not args.no_setup_files,
        merge_same_goal=args.merge_same_goal,
    )
    expand_sources(opts.sources)  # a missing source is said before HOL Light starts
    with hol_core(args.hol_light, not args.no_sandbox, base) as core:
        report = build(opts, core)
    say(report.summary())
    same = report.same_goal()
    if same:
        shown = ", ".join(f"{p.id} (as {p.same_goal_as.id})" for p in same[:SHOWN])
        more = f" and {len(same) - SHOWN} more" if len(same) > SHOWN else ""
        say(
            f"{len(same)} kept problem{'s state' if len(same) > 1 else ' states'} the goal of an "
            "earlier one "
            f"(--merge-same-goal merges them, as collect-problems.py does): {shown}{more}; "
            f"all are in {args.out / BUILD_INFO}"
        )
    say(f"wrote {args.out} (reference proofs: {args.out / 'references.jsonl'})")
    return 0
