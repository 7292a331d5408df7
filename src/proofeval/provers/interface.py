"""The one interface every prover's checker offers. Commands see provers only through it
and the registry (registry.py), never through a prover's own modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from proofeval.errors import CheckerError
from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict

ResultCallback = Callable[[Attempt, Outcome], None]
EventCallback = Callable[[str], None]


@dataclass(frozen=True)
class Job:
    """One attempt to check against its problem, within `timeout` seconds of wall clock."""

    attempt: Attempt
    problem: Problem
    timeout: float


@dataclass(frozen=True)
class CheckSettings:
    """How to check, for every prover; each backend reads the fields that concern it.

    hol_dir: the HOL Light to use (None: Debian's); native: HOL Light compiled natively
    ("on"), as the bytecode toplevel ("off"), or natively where it can be ("auto");
    replay: the second line behind each OK: HOL Light replays the kernel steps in a clean
    process, Coq compiles the attempt in a fresh coqc and decides again (off: OK is the
    first line's word, for measuring the line's cost or checking trusted references);
    coqchk: Coq's second line also runs coqchk on the compiled attempt; coq_toolchain: the Coq
    toolchain every Coq problem runs on, overriding the problem's own ("": its own)."""

    workers: int = 2
    memory_mb: int = 4096
    sandbox: bool = True
    hol_dir: Path | None = None
    native: str = "auto"
    replay: bool = True
    coqchk: bool = False
    coq_toolchain: str = ""  # --coq: the Coq toolchain of every problem ("": their own)


class Checker(Protocol):
    """Checks attempts of one prover's problems, in parallel, each in its sandbox.

    `run` checks every job and calls the `on_result` it was made with exactly once per
    attempt, from any thread; an attempt's failure is its own ERROR, never an exception.
    Jobs may arrive while checking goes on, for as long as the iterator lasts (the API's
    Checker keeps one run per context alive across calls): `problems` names the problems
    known at the start, and a job may name one it does not. It raises only for what stops
    every attempt (the prover is missing)."""

    def run(self, jobs: Iterable[Job], problems: Iterable[Problem]) -> None: ...


def checker_failure(exc: Exception) -> Outcome:
    """The ERROR of an attempt whose checking failed on the prover's side, for any reason."""
    why = str(exc) if isinstance(exc, CheckerError) else f"{type(exc).__name__}: {exc}"
    return Outcome(Verdict.ERROR, Stage.CHECK, 0.0, f"checker failure: {why}")


CheckerFactory = Callable[[CheckSettings, ResultCallback, EventCallback, object], Checker]
