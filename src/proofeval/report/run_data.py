"""Everything a report reads from one run directory, read once."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from proofeval.errors import InputError
from proofeval.metrics import RunMetrics, compute
from proofeval.model import Attempt, Generation, Problem
from proofeval.store import DEFAULT_ARM, FILE_NAME, ResultRow, Round, RunStore, named_arms


@dataclass(frozen=True)
class RunData:
    """A run as reports show it. For a run with repair rounds, `attempts` and `results`
    are each sample's final round (the first OK, else the last round checked: what the
    run ends with), `round` the last round run, and `first` the round-0 verdicts."""

    path: Path
    problems: list[Problem]
    attempts: list[Attempt]
    results: list[ResultRow]
    generations: list[Generation]
    feedback: list[tuple[str, int, dict]] = field(default_factory=list)  # store.all_feedback
    info: dict[str, object] = field(default_factory=dict)  # what produced it (store.info)
    round: int = 0
    first: list[ResultRow] = field(default_factory=list)
    arm: str = DEFAULT_ARM  # this arm's name (runs/arms.py)
    arms: list[RunData] = field(default_factory=list)  # the run's named arms (`run --arm`)

    @cached_property
    def metrics(self) -> RunMetrics:
        return compute(self.results, self.problems, self.generations)

    def every_arm(self) -> list[RunData]:
        """The arms to show side by side: the default one (unless the run has only named
        arms), then the named ones; [self] for a run without arms."""
        default = [self] if self.attempts or not self.arms else []
        return [*default, *self.arms]


def load_run(run_dir: Path) -> RunData:
    """Read a run directory's store, with its named arms; InputError if the directory has
    neither."""
    if not run_dir.is_dir():
        raise InputError(f"no such run directory: {run_dir}")
    arms = [replace(_load_one(path), arm=name) for name, path in named_arms(run_dir)]
    if not (run_dir / FILE_NAME).is_file():
        if arms:  # only named arms were run: the default one is empty
            return RunData(run_dir, [], [], [], [], arms=arms)
        raise InputError(
            f"{run_dir}: not a run directory (no {FILE_NAME}; `proofeval check --out` "
            "or `proofeval run --out` makes one)"
        )
    return replace(_load_one(run_dir), arms=arms)


def _load_one(run_dir: Path) -> RunData:
    store = RunStore(run_dir)
    try:
        first, rounds = store.results(), store.rounds()
        attempts, results = final_round(store.attempts(), first, rounds)
        return RunData(
            run_dir,
            store.problems(),
            attempts,
            results,
            store.generations(),
            store.all_feedback(),
            store.info(),
            max((r.round for r in rounds if r.outcome is not None), default=0),
            first,
        )
    finally:
        store.close()


def final_round(
    attempts: list[Attempt], results: list[ResultRow], rounds: list[Round]
) -> tuple[list[Attempt], list[ResultRow]]:
    """Each sample's attempt and result at its last checked repair round (a sample stops
    at its first OK); samples without rounds as they are."""
    last: dict[tuple[str, int], Round] = {}
    for r in rounds:  # ordered by problem, sample, round
        if r.outcome is not None:
            last[r.problem_id, r.sample] = r
    final_attempts = [
        replace(a, output=last[key].generation.output, proof=last[key].proof)
        if (key := (a.problem_id, a.index)) in last
        else a
        for a in attempts
    ]
    return final_attempts, [
        _at_round(row, last.get((row.problem_id, row.attempt))) for row in results
    ]


def rows_of_every_round(results: list[ResultRow], rounds: list[Round]) -> list[ResultRow]:
    """Every checked attempt of every round: the round-0 rows, then each repair round's."""
    categories = {row.problem_id: row.category for row in results}
    repaired = [
        _at_round(ResultRow(r.problem_id, r.sample, categories.get(r.problem_id, ""), None,
                            None, None, ""), r)
        for r in rounds
        if r.outcome is not None
    ]  # fmt: skip
    return [*results, *repaired]


def _at_round(row: ResultRow, r: Round | None) -> ResultRow:
    if r is None or r.outcome is None:
        return row
    o = r.outcome
    return replace(row, verdict=o.verdict, stage=o.stage, seconds=o.seconds,
                   message=o.message, round=r.round)  # fmt: skip
