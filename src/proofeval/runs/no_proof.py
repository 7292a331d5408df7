"""A reply with no proof in it is "no proof", whatever the prover makes of its prose.

When the prompt asked for a code block (a built-in template, `run` and its repair
rounds) and the reply has none, the whole reply is checked as the proof. An honest bare
proof is then judged as any proof: OK, CHEATING, TIMEOUT and an ERROR at the check stand.
What the prover rejects becomes FAIL at stage `extract` ("no proof in the reply"), as an
empty reply is on every prover: a FAIL, and an ERROR at precheck (HOL Light cannot parse
prose) only when the problem's statement is known to elaborate. That is learnt from the
prover itself, never from its messages: the backend's probe (Coq `idtac.`, HOL Light
`ALL_TAC`, as `validate` uses it) checked on the same problem reaches the proof stage.
Otherwise the ERROR stays: a statement that does not elaborate is the benchmark's fault
and must show as one.

Not for `check` (the answers are someone else's, their prompt unknown) nor for a user's
own template (s2n-bignum-bench's prompt asks for no block).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from proofeval.generate.extract import has_fence
from proofeval.generate.prompts import BUILTIN
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers import registry

PROBE = -1  # the index of a probe's attempt: never recorded in the store


def asks_for_a_block(template: str | None) -> bool:
    """Whether prompts from `template` (None: each prover's built-in) ask for a block."""
    return template is None or template in BUILTIN


def elaborates(outcome: Outcome) -> bool:
    """Whether a probe's outcome shows the statement elaborates: it reached the proof."""
    return outcome.stage is Stage.CHECK and outcome.verdict in (Verdict.FAIL, Verdict.OK)


def relabel(outcome: Outcome, statement_elaborates: bool | None) -> Outcome | None:
    """The "no proof" verdict for a block-less reply's `outcome`, or None: it stands."""
    rejected = outcome.verdict is Verdict.FAIL or (
        outcome.verdict is Verdict.ERROR
        and outcome.stage is Stage.PRECHECK
        and statement_elaborates is True
    )
    if not rejected:
        return None
    why = f"{outcome.verdict.value} at {outcome.stage.value}: {outcome.message}"
    return Outcome(
        Verdict.FAIL,
        Stage.EXTRACT,
        outcome.seconds,
        f"no proof in the reply: it has no code block, and its text is not a proof ({why})",
    )


def needs_probe(outcome: Outcome) -> bool:
    return outcome.verdict is Verdict.ERROR and outcome.stage is Stage.PRECHECK


class NoProof:
    """Settles the block-less replies of one run (thread-safe): probes each of their
    problems once, holds a precheck ERROR until its problem's probe is decided."""

    def __init__(self, asked_for_a_block: bool, problems: dict[str, Problem]) -> None:
        self.asked = asked_for_a_block
        self.problems = problems
        self.lock = threading.Lock()
        self.known: dict[str, bool] = {}  # problem id: its statement elaborates
        self.probed: set[str] = set()
        self.held: dict[str, list[tuple[Attempt, Outcome]]] = {}

    def applies(self, attempt: Attempt) -> bool:
        return self.asked and attempt.index != PROBE and not has_fence(attempt.output)

    def probe(self, attempt: Attempt) -> Attempt | None:
        """The probe attempt to check beside `attempt`, if it is block-less and its
        problem has none yet (and its prover a probe)."""
        if not self.applies(attempt):
            return None
        backend = registry.find(self.problems[attempt.problem_id].prover)
        if backend is None or not backend.probe:
            return None
        with self.lock:
            if attempt.problem_id in self.probed:
                return None
            self.probed.add(attempt.problem_id)
        return Attempt(attempt.problem_id, PROBE, "", backend.probe)

    def settle(self, attempt: Attempt, outcome: Outcome) -> list[tuple[Attempt, Outcome]]:
        """What to record now: for a probe, the replies it releases; a precheck ERROR
        whose probe is not decided yet, nothing (it is held); anything else at once, with
        its verdict as this module decides it."""
        with self.lock:
            if attempt.index == PROBE:
                known = self.known[attempt.problem_id] = elaborates(outcome)
                held = self.held.pop(attempt.problem_id, [])
                return [(a, relabel(o, known) or o) for a, o in held]
            if not self.applies(attempt):
                return [(attempt, outcome)]
            known = self.known.get(attempt.problem_id)
            if needs_probe(outcome) and known is None and attempt.problem_id in self.probed:
                self.held.setdefault(attempt.problem_id, []).append((attempt, outcome))
                return []
            return [(attempt, relabel(outcome, known) or outcome)]


def settle_now(
    output: str,
    outcome: Outcome,
    asked_for_a_block: bool,
    probe: Callable[[str], Outcome],
    problem: Problem,
) -> Outcome:
    """One block-less reply settled at once (repair rounds): `probe(text)` checks the
    backend's probe on the same problem when a precheck ERROR needs it."""
    if not asked_for_a_block or has_fence(output):
        return outcome
    known = None
    backend = registry.find(problem.prover)
    if needs_probe(outcome) and backend is not None and backend.probe:
        known = elaborates(probe(backend.probe))
    return relabel(outcome, known) or outcome
