"""Rocq/Coq: warm sandboxed coqtop sessions, one per header and worker.

    CoqChecker(CheckSettings(workers=2), on_result).run(jobs)   (proofeval.provers.interface)

sentences.py splits text as Coq's lexer does; policy.py screens and renders an answer;
session.py drives one coqtop; verdict.py decides; checker.py runs workers; coqchk.py is
the optional independent re-check.
"""

from proofeval.provers.coq.checker import CoqChecker

__all__ = ["CoqChecker"]
