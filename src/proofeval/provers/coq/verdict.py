"""The Coq verdict: the one place that turns what was observed into OK, FAIL, CHEATING,
TIMEOUT or ERROR. It reads only the policy's early refusal, the plugin's one framed
reply (check.mlg: a verdict word decided inside coqtop from Coq's own parse and data),
the process's fate and the second line's word (recheck.py); never what an answer printed.

The plugin says ok only when: every command of the attempt file was, in Coq's own
parse, a statement, Proof, a tactic, a bullet or brace, Qed or Defined (judge.ml), and
ran; no proof, module or section is left open and the kernel's flags are unchanged; the
constant of the statement's name in the header's module has the type the benchmark's
statement elaborated to before any answer ran (syntactically up to universes, else by
conversion); and nothing it depends on that the header did not have is an axiom, a
primitive, a declaration made with the kernel's checks off, a proof term that cannot be
read, a fixpoint that is not obviously structural, a cofixpoint, a native cast or a VM
cast over primitive integers, floats or arrays (Coq 8.16's kernel is unsound there).
"""

from __future__ import annotations

from proofeval.model import Outcome, Stage, Verdict
from proofeval.provers.coq.policy import Refusal
from proofeval.provers.coq.session import RESOURCES, Report

# The plugin's verdict words, and the stage that decided.
WORDS = {
    "ok": (Verdict.OK, Stage.CHECK),
    "fail": (Verdict.FAIL, Stage.CHECK),
    "cheating": (Verdict.CHEATING, Stage.CHECK),
    "error": (Verdict.ERROR, Stage.CHECK),
    "refused": (Verdict.ERROR, Stage.PRECHECK),
    "refused-cheating": (Verdict.CHEATING, Stage.PRECHECK),
}


def refused(refusal: Refusal) -> Outcome:
    """An answer the policy refused before Coq saw it."""
    verdict = Verdict.CHEATING if refusal.cheating else Verdict.ERROR
    return Outcome(verdict, Stage.PRECHECK, 0.0, str(refusal))


def decide(report: Report, second: str | None = None) -> Outcome:
    """The verdict on one attempt that Coq was asked to check; `second`: why the second
    line (recheck.py) disagrees with an OK."""
    seconds = report.seconds
    if report.timed_out:
        return Outcome(Verdict.TIMEOUT, Stage.CHECK, seconds, "wall-clock limit reached")
    if report.died:
        return Outcome(Verdict.ERROR, Stage.CHECK, seconds, f"coqtop died: {report.died}")
    if report.word not in WORDS:
        why = "; ".join(report.reasons)
        return Outcome(Verdict.ERROR, Stage.CHECK, seconds, f"no verdict from Coq: {why}")
    verdict, stage = WORDS[report.word]
    message = "\n".join(report.reasons)
    if verdict is Verdict.OK and second is not None:
        return Outcome(Verdict.CHEATING, stage, seconds, f"the second line disagrees: {second}")
    return Outcome(verdict, stage, seconds, message)


def exhausted(report: Report) -> bool:
    """Whether the attempt ran out of memory or stack (its process is not kept)."""
    return report.word == "error" and any(r.startswith(RESOURCES) for r in report.reasons)
