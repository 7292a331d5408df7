"""The rules of runs/no_proof.py without a prover: which verdicts of a block-less reply
become "no proof", and that a precheck ERROR waits for its problem's probe."""

from __future__ import annotations

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.runs.no_proof import PROBE, NoProof, asks_for_a_block, relabel

PROBLEMS = {"p": Problem("p", "`T`"), "q": Problem("q", "Theorem q : True.", prover="coq")}


def outcome(verdict: Verdict, stage: Stage) -> Outcome:
    return Outcome(verdict, stage, 0.5, "the prover's words")


def test_only_a_rejection_becomes_no_proof() -> None:
    for verdict, stage in [(Verdict.OK, Stage.CHECK), (Verdict.CHEATING, Stage.CHECK),
                           (Verdict.TIMEOUT, Stage.CHECK), (Verdict.ERROR, Stage.CHECK),
                           (Verdict.CHEATING, Stage.PRECHECK)]:  # fmt: skip
        assert relabel(outcome(verdict, stage), True) is None
    failed = relabel(outcome(Verdict.FAIL, Stage.CHECK), None)
    assert failed is not None and (failed.verdict, failed.stage) == (Verdict.FAIL, Stage.EXTRACT)
    precheck = outcome(Verdict.ERROR, Stage.PRECHECK)
    assert relabel(precheck, None) is None and relabel(precheck, False) is None
    assert relabel(precheck, True) == Outcome(
        Verdict.FAIL, Stage.EXTRACT, 0.5,
        "no proof in the reply: it has no code block, and its text is not a proof "
        "(ERROR at precheck: the prover's words)",
    )  # fmt: skip


def test_built_in_templates_ask_for_a_block_a_users_file_may_not() -> None:
    assert asks_for_a_block(None) and asks_for_a_block("plan_then_proof")
    assert not asks_for_a_block("/data/s2n-bignum-bench/prompt.txt")


def test_a_precheck_error_waits_for_the_probe_and_a_block_is_left_alone() -> None:
    rules = NoProof(True, PROBLEMS)
    prose, fenced = Attempt("p", 0, "Hmm.", "Hmm."), Attempt("p", 1, "```\nX\n```", "X")
    probe = rules.probe(prose)
    assert probe is not None and probe.index == PROBE and probe.proof == "ALL_TAC"
    assert rules.probe(Attempt("p", 2, "Hmm.", "Hmm.")) is None  # one probe per problem
    assert rules.probe(fenced) is None
    error = outcome(Verdict.ERROR, Stage.PRECHECK)
    assert rules.settle(prose, error) == []  # held until the probe is decided
    assert rules.settle(fenced, outcome(Verdict.FAIL, Stage.CHECK))[0][1].stage is Stage.CHECK
    [(settled, verdict)] = rules.settle(probe, outcome(Verdict.FAIL, Stage.CHECK))
    assert settled == prose and (verdict.verdict, verdict.stage) == (Verdict.FAIL, Stage.EXTRACT)

    other = NoProof(True, PROBLEMS)  # the statement does not elaborate: the ERROR stays
    probe = other.probe(prose)
    assert probe is not None and other.settle(prose, error) == []
    assert other.settle(probe, outcome(Verdict.ERROR, Stage.PRECHECK)) == [(prose, error)]
    assert NoProof(False, PROBLEMS).settle(prose, error) == [(prose, error)]
