"""A warm HOL Light core for the commands that need one only to parse or print."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from proofeval.console import say
from proofeval.provers.hol_light.server import Launcher, WarmProcess


@contextmanager
def hol_core(
    hol_dir: Path, sandbox: bool, base: WarmProcess | None = None
) -> Iterator[WarmProcess]:
    """`base` if given (it stays open), else a fresh core, closed afterwards."""
    if base is not None:
        yield base
        return
    launcher = Launcher(hol_dir, sandbox=sandbox)
    try:
        say("loading the HOL Light core (about 2-3 minutes)")
        yield launcher.start()
    finally:
        launcher.close()
