"""The checker side of `run --rounds` and `run --agent`: proofeval's Checker for verdicts
and one proof-state session for a FAIL's feedback (states/feedback.py)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from proofeval.commands.options import checker_settings
from proofeval.console import say
from proofeval.errors import CheckerError, InputError
from proofeval.loaders import load_benchmark
from proofeval.model import Outcome, Problem, Verdict
from proofeval.provers.backend import SharedProcess
from proofeval.scale.api import Checker
from proofeval.scale.sessions import States
from proofeval.states import Budget, StateSession

# diagnose's steps over a whole run: bounded per step (step_timeout), not in number
RUN_BUDGET = Budget(steps=2**62, seconds=float("inf"), live=64)


class CheckerJudge:
    """runs.repair.Judge on a Checker and a state session."""

    def __init__(self, checker: Checker, session: StateSession) -> None:
        self.checker = checker
        self.session = session

    def submit(self, problem: Problem, proof: str, timeout: float) -> Future[Outcome]:
        return self.checker.submit([(problem, proof)], timeout)[0]

    def explain(self, problem: Problem, proof: str, outcome: Outcome) -> dict | None:
        if outcome.verdict is not Verdict.FAIL:
            return None
        try:
            return self.session.diagnose(problem, proof).as_dict()
        except (InputError, CheckerError):  # no states for this prover, a spent budget
            return None


@contextmanager
def judge_for(
    args: argparse.Namespace, warm: dict[str, SharedProcess] | None = None
) -> Iterator[tuple[CheckerJudge, dict[str, object]]]:
    """A judge for the run's benchmark, and the warm processes (HOL Light's core) the
    ordinary run's checker should share with it, so the core is loaded once."""
    problems = load_benchmark(args.problems).problems
    directories = {Path(p.directory) for p in problems if p.directory}
    settings = checker_settings(args)
    with (
        Checker(settings, timeout=args.timeout, read_only=directories, warm=warm, on_event=say)
        as checker,
        States(checker) as states,
        states.session(replace(RUN_BUDGET, memory_mb=args.memory_limit)) as session,
    ):  # fmt: skip
        shared = dict(warm or {})
        if "hol-light" not in shared and any(p.prover == "hol-light" for p in problems):
            shared["hol-light"] = checker.warm_process("hol-light")
        yield CheckerJudge(checker, session), shared
