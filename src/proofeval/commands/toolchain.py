"""`proofeval toolchain add|list`: Coq toolchains, roots built from a Debian release's
packages that a problem or `--coq NAME` chooses instead of the host's Coq."""

from __future__ import annotations

import argparse

from proofeval.console import say
from proofeval.errors import InputError
from proofeval.provers import registry
from proofeval.provers.backend import Toolchains


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "toolchain",
        help="build and list Coq toolchains (another Debian release's Coq, per benchmark)",
        description="Coq toolchains: a root file system built with debootstrap from a Debian "
        "release's packages (Coq, its libraries, CoqHammer and the ATPs), kept under "
        "$XDG_DATA_HOME/proofeval/toolchains/NAME and chosen with `--coq NAME` or a "
        'problem\'s "coq_toolchain" field.',
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser(
        "add", help="build a toolchain (needs root and the network; a few minutes)"
    )
    add.add_argument("name", choices=_chains().buildable(), help="which toolchain to build")
    add.add_argument("--force", action="store_true", help="build it again even if it exists")
    add.set_defaults(handler=_add)
    listing = actions.add_parser("list", help="the toolchains built, with their Coq versions")
    listing.set_defaults(handler=_list)


def _chains() -> Toolchains:
    chains = registry.backend("coq").toolchains
    assert chains is not None
    return chains


def _add(args: argparse.Namespace) -> int:
    _chains().add(args.name, args.force, say)
    return 0


def _list(args: argparse.Namespace) -> int:
    chains = _chains()
    for name in ["host", *chains.installed()]:
        try:
            system = chains.describe(name)
            print(f"{name}\t{system.description}\t{system.root}")
        except InputError as exc:  # the host may have no Coq
            print(f"{name}\tunavailable: {exc}")
    buildable = [n for n in chains.buildable() if n not in chains.installed()]
    if buildable:
        print(f"(not built: {', '.join(buildable)}; `proofeval toolchain add NAME`)")
    return 0
