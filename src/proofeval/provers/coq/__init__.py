"""Rocq/Coq: warm sandboxed coqtop sessions, one per header and worker.

    CoqChecker(CoqSettings(workers=2), on_result).run(jobs)

sentences.py splits text as Coq's lexer does; policy.py screens and renders an answer;
session.py drives one coqtop; verdict.py decides; checker.py runs workers; coqchk.py is
the optional independent re-check.
"""

from proofeval.provers.coq.checker import CoqChecker, CoqSettings, Job

__all__ = ["CoqChecker", "CoqSettings", "Job"]
