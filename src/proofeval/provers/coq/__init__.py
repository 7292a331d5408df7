"""Rocq/Coq: warm sandboxed coqtop sessions, one per header and worker.

    CoqChecker(CheckSettings(workers=2), on_result).run(jobs)   (proofeval.provers.interface)

The trusted core is the plugin (plugin/: judge.ml refuses all but proof sentences on
Coq's own parse, check.mlg runs what it parsed and decides from kernel names and types,
audit.mlg walks what the answer added) and verdict.py, which maps its framed reply to a
verdict; recheck.py is the second line (a fresh coqc, then coqchk). sentences.py and
policy.py are an early, cheap refusal; session.py drives one coqtop; checker.py runs
workers; toolchain.py says which Coq runs (the host's, or a Debian root that
toolchain_build.py makes).
"""

from proofeval.provers.coq.checker import CoqChecker
from proofeval.provers.coq.toolchain import Toolchain, installed, resolve
from proofeval.provers.coq.toolchain_build import RECIPES, add

__all__ = ["RECIPES", "CoqChecker", "Toolchain", "add", "installed", "resolve"]
