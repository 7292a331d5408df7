"""Interactive proof states: sessions that start, branch, apply and finish proofs, and
the feedback a FAIL carries (see session.py)."""

from proofeval.states.feedback import Feedback
from proofeval.states.session import (
    Budget,
    BudgetExceeded,
    Finished,
    State,
    StateSession,
    StepError,
    UnknownState,
)

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Feedback",
    "Finished",
    "State",
    "StateSession",
    "StepError",
    "UnknownState",
]
