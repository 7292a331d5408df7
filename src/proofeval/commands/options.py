"""Options shared by the commands that check proofs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from proofeval.provers import registry
from proofeval.provers.interface import CheckSettings
from proofeval.timeouts import DEFAULT_TIMEOUT


def positive(kind):
    """An argparse type: a positive int or float."""

    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    return parse


def add_hol_light_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument(
        "--hol-light",
        type=Path,
        default=registry.backend("hol-light").home,
        metavar="DIR",
        help="the HOL Light to use: Debian's (hol.ml and its toplevel `ocaml`), or a "
        "source tree built by `make` (hol.ml, ocaml-hol, pa_j.cmo) with the same OCaml as "
        "`ocamlc` on PATH (default %(default)s)",
    )


def add_checker_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("checking")
    g.add_argument(
        "--workers",
        type=positive(int),
        default=os.cpu_count() or 1,
        help="attempts checked in parallel (default: the number of cores, %(default)s)",
    )
    g.add_argument(
        "--timeout",
        type=positive(float),
        default=DEFAULT_TIMEOUT,
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
        type=positive(int),
        default=4096,
        metavar="MB",
        help="address-space limit of each attempt in MiB (default %(default)s)",
    )
    g.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the provers without bubblewrap (only where user namespaces are unavailable)",
    )
    add_hol_light_option(g)
    g.add_argument(
        "--native",
        choices=["auto", "on", "off"],
        default="auto",
        help="HOL Light: run its core and contexts as native code, compiled once and cached "
        "(core start-up 5x and proofs of seconds 2.5x faster, tiny proofs about 2x slower "
        "for the compile; `auto` falls back to the bytecode toplevel, saying why, where it "
        "cannot be built; default %(default)s)",
    )
    g.add_argument(
        "--replay",
        choices=["on", "off"],
        default="on",
        help="the second line behind each OK: HOL Light replays the kernel steps in a clean "
        "process (it holds even if an answer breaks OCaml's type safety); Coq compiles the "
        "attempt in a fresh coqc and decides again from kernel names; "
        "`off` trusts the first line's OK (to measure the line's cost, or check trusted "
        "references) (default %(default)s)",
    )
    g.add_argument(
        "--coq",
        default="",
        metavar="NAME",
        help="Coq: the toolchain every Coq problem runs on, overriding a problem's "
        '"coq_toolchain": host (the installed Coq), a name from `proofeval toolchain list` '
        "(debian13: Coq 8.20.1), or a Coq version one of them has (8.20) (default: each "
        "problem's own, else the host's)",
    )

    g.add_argument(
        "--coqchk",
        action="store_true",
        help="Coq: the second line also re-checks each OK's compiled file with coqchk, Coq's "
        "independent checker (about 0.6 s more per OK)",
    )


def checker_settings(args: argparse.Namespace) -> CheckSettings:
    return CheckSettings(
        workers=args.workers,
        memory_mb=args.memory_limit,
        sandbox=not args.no_sandbox,
        hol_dir=args.hol_light,
        native=args.native,
        replay=args.replay == "on",
        coqchk=args.coqchk,
        coq_toolchain=coq_toolchain(args.coq),
    )


def coq_toolchain(name: str) -> str:
    """The name of the toolchain --coq names, checked before anything runs."""
    chains = registry.backend("coq").toolchains
    assert chains is not None
    return chains.validated(name)
