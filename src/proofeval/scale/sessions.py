"""Proof-state sessions on a Checker's warm provers: HOL Light's states fork the
Checker's loaded core, and finish's verdicts are the Checker's.

    with Checker() as checker, States(checker) as states:
        with states.session(Budget(steps=100)) as session:
            root = session.start(p)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from proofeval.checking.checker import LocalChecker
from proofeval.errors import CheckerError, InputError
from proofeval.model import Outcome, Problem, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import StateOpener
from proofeval.states import Budget, Feedback, StateSession
from proofeval.store import RunStore


class States:
    """Opens sessions of proof states; each prover's shared part (HOL Light's loaded
    contexts) is kept for all of them until `close`."""

    def __init__(self, checker: LocalChecker) -> None:
        self.checker = checker
        self._openers: dict[str, StateOpener] = {}
        self._lock = threading.Lock()

    def opener(self, prover: str) -> StateOpener:
        with self._lock:
            if prover not in self._openers:
                shared = None
                if registry.has_shared(prover):
                    shared = self.checker.warm_process(prover)
                settings = self.checker.settings
                self._openers[prover] = registry.state_opener(prover, settings, shared)
            return self._openers[prover]

    def session(self, budget: Budget | None = None, store: RunStore | None = None) -> StateSession:
        return StateSession(self.opener, self.checker, budget, store)

    def explain(
        self, items: Sequence[tuple[Problem, str]], outcomes: Sequence[Outcome]
    ) -> list[Feedback | None]:
        """The feedback of each FAIL among `outcomes` (of `items`, in order), found through
        proof states (StateSession.diagnose); None for the others, and where the prover
        gives none."""
        found: list[Feedback | None] = []
        with self.session() as session:
            for (problem, proof), outcome in zip(items, outcomes, strict=True):
                if outcome.verdict is not Verdict.FAIL:
                    found.append(None)
                    continue
                try:
                    found.append(session.diagnose(problem, proof))
                except (InputError, CheckerError):  # a prover without states, a dead process
                    found.append(None)
        return found

    def close(self) -> None:
        with self._lock:
            for opener in self._openers.values():
                opener.close()
            self._openers.clear()

    def __enter__(self) -> States:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
