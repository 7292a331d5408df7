"""A prover's shared process for the commands that need one only to parse or print
(HOL Light's core, for building and obfuscating benchmarks)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from proofeval.console import say
from proofeval.provers import registry
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings


@contextmanager
def hol_core(
    hol_dir: Path, sandbox: bool, base: SharedProcess | None = None
) -> Iterator[SharedProcess]:
    """`base` if given (it stays open), else a fresh core, closed afterwards. The
    bytecode toplevel: parsing and printing need no native build."""
    if base is not None:
        yield base
        return
    say("loading the HOL Light core in bytecode (1-5 minutes)")
    settings = CheckSettings(hol_dir=hol_dir, sandbox=sandbox, native="off")
    started = registry.start_shared("hol-light", settings)
    assert started is not None  # HOL Light's checkers share its core
    try:
        yield started.process
    finally:
        started.close()
