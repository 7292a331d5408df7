"""An inspect_ai scorer backed by proofeval's checker, and proofeval's pass@k as an
inspect epoch reducer. A score is CORRECT when the verdict is OK; its metadata holds the
verdict, the stage, the seconds and the checker's message."""

from __future__ import annotations

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    accuracy,
    score_reducer,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from proofeval.agents.tools import verdict_reply
from proofeval.integrations.verifier import default_verifier, problem_from
from proofeval.metrics import pass_at_k
from proofeval.model import Outcome, Stage, Verdict

PROBLEM = "problem"  # the sample metadata key holding the problem's fields
SUBMITTED = "proofeval:submitted"  # the store key of an agent's submitted proof and verdict
AGENT = "proofeval:agent"  # the store key saying the sample was an agent's


@scorer(metrics=[accuracy(), stderr()])
def proof_checker(timeout: float | None = None) -> Scorer:
    """The ordinary checker's verdict on the model's output (its proof extracted as
    `proofeval check` does), on the process's default verifier (verifier.py); for an
    agent's sample (inspect_tools.prove_with_tools), the verdict the checker gave its
    submitted proof, or FAIL when it submitted none. Samples carry their problem in
    metadata["problem"] (proofeval's tasks do)."""

    async def score(state: TaskState, target: Target) -> Score:
        del target  # proofs are judged by the prover, never against a reference
        p = problem_from(state.metadata[PROBLEM])
        if state.store.get(AGENT):
            proof, outcome = _submitted(state.store.get(SUBMITTED))
        else:
            proof = state.output.completion
            [outcome] = await default_verifier().acheck([(p, proof)], timeout)
        return Score(
            value=CORRECT if outcome.verdict is Verdict.OK else INCORRECT,
            answer=proof,
            explanation=outcome.message,
            metadata=verdict_reply(outcome) | {"problem_id": p.id, "prover": p.prover},
        )

    return score


def _submitted(kept: dict | None) -> tuple[str, Outcome]:
    """An agent's submitted proof and the checker's outcome on it (kept by the solver)."""
    if kept is None:
        return "", Outcome(Verdict.FAIL, Stage.EXTRACT, 0.0, "no proof submitted")
    verdict, stage = Verdict(kept["verdict"]), Stage(kept["stage"])
    return kept["proof"], Outcome(verdict, stage, float(kept["seconds"]), kept["message"])


@score_reducer
def pass_at(k: int) -> ScoreReducer:
    """proofeval's pass@k (proofeval.metrics) over a sample's epochs: n the epochs with a
    verdict, c the OK ones; 0 with no verdict; with fewer than k verdicts (a failed epoch),
    pass@n. The reduced score's metadata holds n, c and the verdict counts."""

    def reduce(scores: list[Score]) -> Score:
        verdicts = [s.metadata["verdict"] for s in scores if s.metadata and "verdict" in s.metadata]
        n, c = len(verdicts), verdicts.count(Verdict.OK.value)
        value = pass_at_k(n, c, min(k, n)) if n else 0.0
        counts = {v: verdicts.count(v) for v in sorted(set(verdicts))}
        return Score(value=value, metadata={"n": n, "c": c, "verdicts": counts})

    return reduce
