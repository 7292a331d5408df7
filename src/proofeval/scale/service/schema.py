"""The replies of proof states and verdicts, written down once for both surfaces: the MCP
tools' output schemas (mcp_server.py) and the service's OpenAPI (scale/service) are made
from these models, and both send what the functions below build.

One shape for one thing: a state is always an object (its `id` is what apply, release,
finish and submit take, as `state_id`); a step the prover refuses answers the state it
was applied to, unchanged, with `error`; `seconds` is rounded to the millisecond on every
prover. A state's fields beyond these (the structured goals of State.as_dict) reach
clients as the proof-state API gives them: the models allow more fields than they name."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from proofeval.model import Outcome, Verdict
from proofeval.states import Feedback, State, StepError
from proofeval.states.search import Found

VerdictName = Literal[tuple(v.value for v in Verdict)]  # type: ignore[valid-type]


class Reply(BaseModel):
    # a field added to a reply reaches clients before its schema says so: allowed
    model_config = ConfigDict(extra="allow")


class FeedbackReply(Reply):
    """Where a FAIL stands: the goals left, or the step that failed and its goals."""

    goals: list[str] = Field(description="each goal as the prover shows it")
    more_goals: int = Field(description="goals left out (beyond 10, or 8,000 characters)")
    failed_step: int | None = Field(description="index from 0 of the step that failed")
    failed_tactic: str
    message: str


class VerdictReply(Reply):
    """The ordinary checker's verdict; `feedback` only on a FAIL that has some."""

    verdict: VerdictName  # type: ignore[valid-type]
    stage: str
    seconds: float = Field(description="rounded to the millisecond")
    message: str
    feedback: FeedbackReply | None = None


class FinishReply(VerdictReply):
    proof: str = Field(description="the proof checked: the state's path assembled")


class SubmitReply(FinishReply):
    attempt: int = Field(description="the attempt's index in the run's store")


class StepErrorBody(Reply):
    """A step refused: by the prover (FAIL), the answer language (CHEATING or ERROR at
    precheck) or its clock (TIMEOUT)."""

    state: str = Field(description="the id of the state it was applied to")
    tactic: str
    verdict: VerdictName  # type: ignore[valid-type]
    stage: str
    message: str


class HypothesisReply(Reply):
    name: str = Field(description="Coq's identifier, HOL Light's label (\"\" if none)")
    type: str
    body: str | None = Field(default=None, description="a let-bound hypothesis's value")


class GoalReply(Reply):
    id: str = Field(description="the same for the same hypotheses and conclusion")
    kind: str = Field(description="focused, unfocused, shelved or given_up")
    hypotheses: list[HypothesisReply]
    conclusion: str
    text: str = Field(description="the whole goal as the prover shows it")


class GoalsReply(Reply):
    """A state's goals with their hypotheses (Goals.as_json)."""

    goals: list[GoalReply]
    messages: list[str] = Field(description="the prover's messages apart from the goals")
    complete: bool = Field(description="no goal of any kind is left")


class StateReply(Reply):
    """A proof state; with `error`, the state a refused step left as it was."""

    id: str = Field(description="the state's id: apply, release, finish and submit take it")
    problem_id: str
    goals: list[str] = Field(description="each goal as the prover shows it")
    solved: bool
    steps: list[str] = Field(description="the tactics from the statement to this state")
    proof_state: GoalsReply | None = Field(default=None, description="the goals, structured")
    error: StepErrorBody | None = None


class TheoremReply(Reply):
    name: str
    statement: str = Field(description="as the prover prints it, cut at 4,000 characters")


class SearchReply(Reply):
    """Theorems of the problem's context that match (states/search.py); with `error`,
    the prover refused the pattern."""

    theorems: list[TheoremReply]
    more: bool = Field(description="the prover found others past the limit")
    error: StepErrorBody | None = None


class ReleasedReply(Reply):
    released: str


class ProblemSummary(Reply):
    id: str
    category: str
    prover: str


class ProblemsReply(Reply):
    problems: list[ProblemSummary]


class ProblemReply(ProblemSummary):
    header: str
    statement: str


def verdict_reply(outcome: Outcome, feedback: Feedback | None = None) -> dict:
    shown = {"verdict": outcome.verdict.value, "stage": outcome.stage.value,
             "seconds": round(outcome.seconds, 3), "message": outcome.message}  # fmt: skip
    return shown | ({"feedback": feedback.as_dict()} if feedback is not None else {})


def state_reply(result: State | StepError) -> dict:
    if isinstance(result, StepError):
        return result.state.as_dict() | {"error": result.as_dict()}
    return result.as_dict()


def search_reply(found: Found | StepError) -> dict:
    if isinstance(found, StepError):
        return {"theorems": [], "more": False, "error": found.as_dict()}
    return found.as_json()


# what each MCP tool answers (its output schema)
OUTPUTS: dict[str, type[Reply]] = {
    "list_problems": ProblemsReply,
    "read_problem": ProblemReply,
    "check": VerdictReply,
    "start_state": StateReply,
    "apply_tactic": StateReply,
    "release_state": ReleasedReply,
    "search_theorems": SearchReply,
    "submit": SubmitReply,
}
