"""`proofeval validate`: the health of a benchmark's statements before anyone spends a GPU
on it. Each statement is checked in its context by the real checker with a probe proof
that can only fail (Coq `idtac.`, HOL Light `ALL_TAC`): the checker type-checks the
context and the statement before any proof, so an attempt that reaches the proof stage
(a FAIL or an OK at stage check) shows the statement elaborates, and a precheck ERROR
says why it does not. With `reference`, each reference proof is checked too.

Everything goes through a run store in `out` (resumable: a re-run checks only what is
missing), in parallel as `check` is (workers, warm contexts, sandbox).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofeval.console import say
from proofeval.errors import InputError
from proofeval.files import write_text_atomically
from proofeval.loaders import Selection, load_benchmark, skipped_summary
from proofeval.model import Attempt, Problem, Stage, Verdict
from proofeval.provers import registry
from proofeval.provers.backend import SharedProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.runs.check import check_jobs, record_provers
from proofeval.store import ResultRow, RunStore
from proofeval.timeouts import DEFAULT_TIMEOUT

PROBE, REFERENCE = 0, 1  # attempt indices in the store
FORMAT = "proofeval-validate/1"
ELABORATES = "ok"
CAUSES = (
    "missing library",
    "Rocq 9 syntax",
    "type error in the statement",
    "type error in the context",
    "timeout",
    "not checked",
    "other",
)
VALID_LIST = "valid.txt"  # the ids whose statements elaborate, for --only @FILE

_MISSING = re.compile(
    r"Cannot find a physical path|Cannot find library|Unable to locate library|"
    r"Cannot load .*: no such file|Cannot find file|Unbound module",
)
_UNUSABLE = "the statement is unusable: "


@dataclass(frozen=True)
class ValidateOptions:
    problems: Path
    out: Path
    selection: Selection = Selection()
    reference: bool = False
    timeout: float = DEFAULT_TIMEOUT
    settings: CheckSettings = CheckSettings()


@dataclass(frozen=True)
class Health:
    """One statement: `status` is ELABORATES or a cause (CAUSES), with the prover's
    message; `reference` the verdict of its reference proof when it was checked."""

    problem_id: str
    category: str
    status: str
    message: str = ""
    reference: str | None = None
    reference_message: str = ""


def validate(opts: ValidateOptions, warm: dict[str, SharedProcess] | None = None) -> list[Health]:
    """Check what the store at `opts.out` lacks; the health of every statement.
    `warm`: a ready process per prover to reuse (tests reuse one HOL Light core)."""
    bench = load_benchmark(opts.problems, opts.selection)
    skipped = skipped_summary(bench)
    if skipped is not None:
        say(f"warning: {skipped}")
    registry.refuse_unchecked(bench.problems)
    for prover in sorted({p.prover for p in bench.problems}):
        if registry.backend(prover).probe is None:
            raise InputError(
                f"prover {prover!r} has no probe answer: its statements cannot be validated"
            )
    attempts = _attempts(bench.problems, opts.reference)
    if opts.reference and not any(a.index == REFERENCE for a in attempts):
        raise InputError(f"{opts.problems} has no reference proofs")
    problems = {p.id: p for p in bench.problems}
    store = RunStore(opts.out)
    try:
        store.add_problems(bench.problems)
        store.add_attempts(attempts)
        pending = store.pending(attempts)
        if len(pending) < len(attempts):
            say(f"{len(attempts) - len(pending)} of {len(attempts)} checks already done")
        jobs = [
            Job(a, problems[a.problem_id], _limit(problems[a.problem_id], opts)) for a in pending
        ]
        check_jobs(jobs, store, opts.settings, warm)
        rows = store.results()
    finally:
        store.close()
    health = judge(bench.problems, rows)
    valid = [h.problem_id for h in health if h.status == ELABORATES]
    write_text_atomically(opts.out / VALID_LIST, "".join(f"{pid}\n" for pid in valid))
    record_provers(opts.out, bench.problems, opts.settings)
    return health


def _limit(problem: Problem, opts: ValidateOptions) -> float:
    return problem.timeout or opts.timeout


def _attempts(problems: list[Problem], reference: bool) -> list[Attempt]:
    attempts = []
    for p in problems:
        probe = registry.backend(p.prover).probe or ""  # every prover has one (validate)
        attempts.append(Attempt(p.id, PROBE, probe, probe))
        if reference and p.reference:
            attempts.append(Attempt(p.id, REFERENCE, p.reference, p.reference))
    return attempts


def judge(problems: list[Problem], rows: list[ResultRow]) -> list[Health]:
    """Each problem's health from its probe's row (and its reference's)."""
    by_attempt = {(r.problem_id, r.attempt): r for r in rows}
    health = []
    for p in problems:
        probe = by_attempt.get((p.id, PROBE))
        status, message = cause(probe)
        ref = by_attempt.get((p.id, REFERENCE))
        verdict = None if ref is None or ref.verdict is None else ref.verdict.value
        ref_message = "" if ref is None or ref.verdict is Verdict.OK else ref.message
        health.append(Health(p.id, p.category, status, message, verdict, ref_message))
    return health


def cause(row: ResultRow | None) -> tuple[str, str]:
    """(ELABORATES or a cause, the message) of a probe's row."""
    if row is None or row.verdict is None:
        return "not checked", ""
    if row.stage is Stage.CHECK and row.verdict in (Verdict.OK, Verdict.FAIL):
        return ELABORATES, ""
    message = row.message
    if row.verdict is Verdict.TIMEOUT:
        return "timeout", message
    if _MISSING.search(message):
        return "missing library", message
    if "Rocq 9" in message or "Stdlib" in message:
        return "Rocq 9 syntax", message
    if message.startswith(_UNUSABLE):
        return "type error in the statement", message.removeprefix(_UNUSABLE)
    if row.verdict is Verdict.ERROR and row.stage is Stage.PRECHECK:
        return "type error in the context", message
    return "other", message


def by_cause(health: list[Health]) -> dict[str, list[Health]]:
    """The statements that do not elaborate, by cause, in CAUSES order."""
    groups: dict[str, list[Health]] = {}
    for h in health:
        if h.status != ELABORATES:
            groups.setdefault(h.status, []).append(h)
    return {c: groups[c] for c in CAUSES if c in groups}


def document(bench: str, health: list[Health]) -> dict[str, Any]:
    """The --json form."""
    references = [h for h in health if h.reference is not None]
    return {
        "format": FORMAT,
        "benchmark": bench,
        "statements": len(health),
        "elaborate": sum(h.status == ELABORATES for h in health),
        "causes": {c: [h.problem_id for h in hs] for c, hs in by_cause(health).items()},
        "references": {
            "checked": len(references),
            "ok": sum(h.reference == Verdict.OK.value for h in references),
        },
        "problems": [
            {
                "id": h.problem_id,
                "category": h.category,
                "status": h.status,
                "message": h.message,
                "reference": h.reference,
                "reference_message": h.reference_message,
            }
            for h in health
        ],
    }
