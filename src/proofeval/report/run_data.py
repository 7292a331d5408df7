"""Everything a report reads from one run directory, read once."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from proofeval.errors import InputError
from proofeval.metrics import RunMetrics, compute
from proofeval.model import Attempt, Generation, Problem
from proofeval.store import FILE_NAME, ResultRow, RunStore


@dataclass(frozen=True)
class RunData:
    path: Path
    problems: list[Problem]
    attempts: list[Attempt]
    results: list[ResultRow]
    generations: list[Generation]
    feedback: list[tuple[str, int, dict]] = field(default_factory=list)  # store.all_feedback
    info: dict[str, object] = field(default_factory=dict)  # what produced it (store.info)

    @cached_property
    def metrics(self) -> RunMetrics:
        return compute(self.results, self.problems, self.generations)


def load_run(run_dir: Path) -> RunData:
    """Read a run directory's store; InputError if the directory has none."""
    if not run_dir.is_dir():
        raise InputError(f"no such run directory: {run_dir}")
    if not (run_dir / FILE_NAME).is_file():
        raise InputError(
            f"{run_dir}: not a run directory (no {FILE_NAME}; `proofeval check --out` "
            "or `proofeval run --out` makes one)"
        )
    store = RunStore(run_dir)
    try:
        return RunData(
            run_dir,
            store.problems(),
            store.attempts(),
            store.results(),
            store.generations(),
            store.all_feedback(),
            store.info(),
        )
    finally:
        store.close()
