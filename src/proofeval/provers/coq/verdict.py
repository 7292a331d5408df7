"""The Coq verdict: the one place that turns what was observed into OK, FAIL, CHEATING,
TIMEOUT or ERROR. Everything it reads comes from the checker's own channels (the policy's
refusal, coqtop's error for the nonce-named attempt file, `Print Assumptions` between
nonce markers, the process's fate, coqchk's exit status), never from the answer's output.

OK needs all of: the attempt file loaded (Coq accepted every sentence and the closing Qed
or Defined of the benchmark's own statement), `Print Assumptions` of the theorem printed
something, every assumption it lists is one the header's environment already has (asked
again after going back to the header, and printed the same there; else CHEATING), the
proof-term audit (audit.py) answered and found, outside the header's and libraries'
constants, no fixpoint that is not obviously structural, no cofixpoint, no native cast
and no VM cast over primitive integers, floats or arrays (Coq 8.16's kernel cannot be
trusted on those), and, with --coqchk, coqchk accepted the compiled file.
"""

from __future__ import annotations

from proofeval.model import Outcome, Stage, Verdict
from proofeval.provers.coq.policy import Refusal
from proofeval.provers.coq.session import Report

RESOURCES = ("Out of memory", "Stack overflow")
GIVEN_UP = "Attempt to save a proof with given up goals"


def refused(refusal: Refusal) -> Outcome:
    """An answer the policy refused before Coq saw it."""
    verdict = Verdict.CHEATING if refusal.cheating else Verdict.ERROR
    return Outcome(verdict, Stage.PRECHECK, 0.0, str(refusal))


def decide(report: Report, coqchk_error: str | None = None) -> Outcome:
    """The verdict on one attempt that Coq was asked to check."""
    seconds = report.seconds

    def outcome(verdict: Verdict, message: str, stage: Stage = Stage.CHECK) -> Outcome:
        return Outcome(verdict, stage, seconds, message)

    if report.timed_out:
        return outcome(Verdict.TIMEOUT, "wall-clock limit reached")
    if report.died:
        return outcome(Verdict.ERROR, f"coqtop died: {report.died}")
    if report.error:
        return _failed(report.error, outcome)
    if report.assumptions is None:
        return outcome(Verdict.ERROR, "the theorem is not defined after a clean load")
    if report.new:
        return outcome(Verdict.CHEATING, "new assumptions: " + "; ".join(report.new))
    if report.findings is None:
        return outcome(Verdict.ERROR, "the proof-term audit gave no answer")
    if report.findings:
        found = "; ".join(report.findings)
        return outcome(
            Verdict.ERROR,
            f"refused: the proof term holds {found} (Coq 8.16's kernel is unsound there)",
        )
    if coqchk_error is not None:
        return outcome(Verdict.CHEATING, f"coqchk rejected the proof: {coqchk_error}")
    return outcome(Verdict.OK, "")


def _failed(error: str, outcome) -> Outcome:
    """The attempt file did not load: why decides between FAIL, CHEATING and ERROR."""
    first = error.removeprefix("Error:").strip()
    if any(first.startswith(r) for r in RESOURCES):
        return outcome(Verdict.ERROR, f"resources exhausted: {first}")
    if first.startswith("Anomaly"):
        return outcome(Verdict.ERROR, first)
    if first.lower().startswith("syntax error"):  # Coq's lexer says "Syntax Error: Lexer"
        return outcome(Verdict.ERROR, f"does not parse: {first}", Stage.PRECHECK)
    if GIVEN_UP in first:
        return outcome(Verdict.CHEATING, "closes a proof with given-up (admitted) goals")
    return outcome(Verdict.FAIL, first)
