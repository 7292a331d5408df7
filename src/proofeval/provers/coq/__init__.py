"""Rocq/Coq: warm sandboxed coqtop sessions, one per header and worker.

    CoqChecker(CheckSettings(workers=2), on_result).run(jobs)   (proofeval.provers.interface)

sentences.py splits text as Coq's lexer does; policy.py screens and renders an answer;
session.py drives one coqtop; verdict.py decides; checker.py runs workers; coqchk.py is
the optional independent re-check; toolchain.py says which Coq runs (the host's, or a
Debian root that toolchain_build.py makes).
"""

from proofeval.provers.coq.checker import CoqChecker
from proofeval.provers.coq.toolchain import Toolchain, installed, resolve
from proofeval.provers.coq.toolchain_build import RECIPES, add

__all__ = ["RECIPES", "CoqChecker", "Toolchain", "add", "installed", "resolve"]
