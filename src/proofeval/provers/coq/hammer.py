"""CoqHammer as a baseline: its budgets, and the ATPs it finds in a toolchain's system."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# CoqHammer's own budgets (its defaults, `Set Hammer ATPLimit` / `ReconstrLimit`), and the
# seconds coqtop needs around them: the default budget of the hammer tactic is their sum, so
# that the wall clock never cuts CoqHammer before its own limits do.
ATP_LIMIT = 20
RECONSTR_LIMIT = 5
SLACK = 5
TIMEOUT = float(ATP_LIMIT + RECONSTR_LIMIT + SLACK)
# The ATPs CoqHammer calls, by the program it runs (in the checker's PATH).
ATPS = {"E": "eprover", "CVC4": "cvc4", "Z3": "z3_tptp", "Vampire": "vampire"}
CHECKER_PATH = "/usr/libexec/coq-hammer:/usr/bin:/bin"
IMPORT = "From Hammer Require Import Hammer."


def atps(root: Path = Path("/")) -> tuple[list[str], list[str]]:
    """(the ATPs CoqHammer finds in the system at `root`, those it does not): a toolchain's
    checker sees its root's /usr, not the host's."""
    path = os.pathsep.join(str(root / d.lstrip("/")) for d in CHECKER_PATH.split(":"))
    found = {n: shutil.which(p, path=path) is not None for n, p in ATPS.items()}
    return [n for n, ok in found.items() if ok], [n for n, ok in found.items() if not ok]


def limit_line(problem_timeout: float) -> str:
    """The header line that gives CoqHammer's ATPs the paper's per-problem budget, less
    reconstruction and coqtop's own time."""
    atp = max(1, int(problem_timeout) - RECONSTR_LIMIT - SLACK)
    return f"Set Hammer ATPLimit {atp}."
