"""Time a benchmark's reference proofs and derive per-problem time limits.

Each reference is checked `runs` times (forks of one warm context, as check does); a
problem's prove_secs is the median of its OK runs. The official s2n-bignum-bench rule
turns that into timeout_sec: under 60 s, 120 s; up to 120 s, twice the time; beyond,
five times, capped at 10800 s (seconds rounded down). timeout-map.json keeps both, as
the official file does: a list of {problem_id, prove_secs, timeout_sec}.
"""

from __future__ import annotations

import json
import statistics
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from proofeval.checking.engine import check_all
from proofeval.errors import InputError
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.timeouts import TimeoutPolicy


@dataclass(frozen=True)
class TimeoutRule:
    short_below: float = 60.0
    short_timeout: float = 120.0
    double_up_to: float = 120.0
    double_factor: float = 2.0
    long_factor: float = 5.0
    cap: float = 10800.0

    def timeout(self, secs: float) -> int:
        if secs < self.short_below:
            return int(self.short_timeout)
        if secs <= self.double_up_to:
            return int(self.double_factor * secs)
        return int(min(self.long_factor * secs, self.cap))


@dataclass(frozen=True)
class Timing:
    problem_id: str
    verdicts: tuple[Verdict, ...]
    seconds: tuple[float, ...]  # of the OK runs
    message: str = ""  # of the first run that was not OK

    @property
    def prove_secs(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


def time_references(
    problems: list[Problem],
    runs: int,
    policy: TimeoutPolicy,
    settings: CheckSettings,
    on_event: Callable[[str], None] = lambda _msg: None,
    on_result: Callable[[], None] = lambda: None,
    warm: dict[str, SharedProcess] | None = None,
) -> list[Timing]:
    """Check every reference `runs` times; one Timing per problem with a reference."""
    with_ref = [p for p in problems if p.reference]
    if not with_ref:
        raise InputError("the benchmark has no reference proofs to time")
    jobs = [
        Job(Attempt(p.id, r, p.reference, p.reference), p, policy.for_problem(p))
        for r in range(runs)
        for p in with_ref
        if p.reference is not None
    ]
    outcomes: dict[str, list[Outcome]] = defaultdict(list)
    lock = threading.Lock()

    def record(attempt: Attempt, outcome: Outcome) -> None:
        with lock:
            outcomes[attempt.problem_id].append(outcome)
        on_result()

    check_all(jobs, with_ref, settings, record, on_event, warm)
    return [_timing(p.id, outcomes[p.id]) for p in with_ref]


def _timing(pid: str, outcomes: list[Outcome]) -> Timing:
    ok = tuple(o.seconds for o in outcomes if o.verdict == Verdict.OK)
    bad = [o for o in outcomes if o.verdict != Verdict.OK]
    message = f"{bad[0].verdict.value}: {bad[0].message}" if bad else ""
    return Timing(pid, tuple(o.verdict for o in outcomes), ok, message)


def timeout_map(timings: list[Timing], rule: TimeoutRule) -> list[dict]:
    """The official timeout-map.json entries, sorted by id, for problems with an OK run."""
    rows = []
    for t in sorted(timings, key=lambda t: t.problem_id):
        secs = t.prove_secs
        if secs is not None:
            rows.append(
                {
                    "problem_id": t.problem_id,
                    "prove_secs": round(secs, 3),
                    "timeout_sec": rule.timeout(secs),
                }
            )
    return rows


def write_timeout_map(path: Path, rows: list[dict]) -> None:
    path.write_text(json.dumps(rows, indent=2) + "\n")
