"""`run --rounds R`: repair rounds after the ordinary run. A sample whose latest attempt
is not OK goes back to the model with that answer, its verdict and the checker's
structured feedback (generate/repair.py renders the prompt), up to R rounds.

Round 0 is the ordinary run (store tables attempts, verdicts, feedback); rounds from 1 on
are the store's repair_rounds. Every completion is committed as it arrives, every verdict
as it is decided and every feedback as it is found, so a killed run resumes mid-round:
unchecked rounds are checked, missing ones asked for. A larger R continues a finished run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, as_completed
from dataclasses import dataclass
from typing import Protocol

from tqdm import tqdm

from proofeval.files import write_jsonl_atomically
from proofeval.generate.client import SamplingSettings
from proofeval.generate.repair import Previous, render_repair
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Generation, Outcome, Problem, Verdict
from proofeval.provers.backend import SharedProcess
from proofeval.provers.registry import supported
from proofeval.report.run_data import rows_of_every_round
from proofeval.report.table import write_results_csv
from proofeval.runs.generate import Extraction, ask_all
from proofeval.runs.no_proof import asks_for_a_block, settle_now
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.store import Round, RunStore
from proofeval.timeouts import load_policy

REPAIRS_FILE = "repairs.jsonl"  # every repair round, for reading outside proofeval
Key = tuple[str, int]  # (problem id, sample)
TimeoutOf = Callable[[Problem], float]


class Judge(Protocol):
    """The checker side of repair: verdicts, and a FAIL's feedback (None: the prover gives
    none). commands/run.py builds one on proofeval's Checker and its proof states."""

    def submit(self, problem: Problem, proof: str, timeout: float) -> Future[Outcome]: ...

    def explain(self, problem: Problem, proof: str, outcome: Outcome) -> dict | None: ...


@dataclass(frozen=True)
class RepairOptions:
    rounds: int
    sampling: SamplingSettings
    extraction: Extraction = Extraction()
    template: str | None = None  # a repair template file; None: the built-in one


@dataclass
class _Latest:
    """A sample's latest round: what the next repair prompt is made from."""

    number: int
    prompt: str  # the sample's round-0 prompt
    output: str
    proof: str
    outcome: Outcome | None
    feedback: dict | None
    row: Round | None  # None for round 0


def run_repairs(
    opts: RepairOptions,
    store: RunStore,
    problems: dict[str, Problem],
    timeout_of: TimeoutOf,
    judge: Judge,
) -> int:
    """Run rounds 1..R over the store's samples; how many rounds were generated."""
    generated = 0
    checker = _Checker(store, problems, timeout_of, judge, asks_for_a_block(opts.template))
    for number in range(1, opts.rounds + 1):
        latest = _latest(store, problems)
        checker.check(_unchecked(latest, number))
        latest = _latest(store, problems)
        todo = {k: v for k, v in latest.items() if v.number == number - 1 and _failed(v)}
        if not todo:
            continue
        _explain(store, problems, judge, todo)
        generated += _generate(opts, store, problems, todo, number)
        latest = _latest(store, problems)
        checker.check(_unchecked(latest, number))
    return generated


def _failed(latest: _Latest) -> bool:
    return latest.outcome is not None and latest.outcome.verdict is not Verdict.OK


def _unchecked(latest: dict[Key, _Latest], number: int) -> list[Round]:
    return [
        v.row
        for v in latest.values()
        if v.row is not None and v.number == number and v.outcome is None
    ]


def _latest(store: RunStore, problems: dict[str, Problem]) -> dict[Key, _Latest]:
    """Every sample's latest round, from the ordinary tables and the repair rounds."""
    outcomes = {(a.problem_id, a.index): a for a in store.attempts()}
    latest: dict[Key, _Latest] = {}
    for g in store.generations():
        attempt = outcomes.get((g.problem_id, g.sample))
        if g.problem_id not in problems or attempt is None:
            continue
        latest[(g.problem_id, g.sample)] = _Latest(
            0, g.prompt, g.output, attempt.proof, store.outcome(attempt),
            store.feedback(attempt), None,
        )  # fmt: skip
    for r in store.rounds():
        first = latest.get((r.problem_id, r.sample))
        if first is None:
            continue
        latest[(r.problem_id, r.sample)] = _Latest(
            r.round, first.prompt, r.generation.output, r.proof, r.outcome, r.feedback, r
        )
    return latest


def _explain(
    store: RunStore, problems: dict[str, Problem], judge: Judge, todo: dict[Key, _Latest]
) -> None:
    """Find and keep the feedback of each FAIL that has none yet."""
    for (pid, sample), latest in todo.items():
        if latest.feedback is not None or latest.outcome is None:
            continue
        if latest.outcome.verdict is not Verdict.FAIL:
            continue
        found = judge.explain(problems[pid], latest.proof, latest.outcome)
        if found is None:
            continue
        latest.feedback = found
        if latest.row is None:
            store.record_feedback(Attempt(pid, sample, latest.output, latest.proof), found)
        else:
            store.record_round_feedback(latest.row, found)


def _generate(
    opts: RepairOptions,
    store: RunStore,
    problems: dict[str, Problem],
    todo: dict[Key, _Latest],
    number: int,
) -> int:
    requests = []
    for (pid, sample), v in sorted(todo.items()):
        assert v.outcome is not None
        previous = Previous(v.prompt, v.output, v.proof, v.outcome, v.feedback)
        prompt = render_repair(opts.template, problems[pid], previous, number)
        requests.append((problems[pid], prompt, [sample]))

    def arrived(gen: Generation) -> None:
        problem = problems[gen.problem_id]
        proof = opts.extraction.attempt(gen, problem).proof
        store.record_round(Round(gen.problem_id, gen.sample, number, gen, proof))

    return ask_all(opts.sampling, requests, arrived, f"round {number}")


class _Checker:
    """Checks rounds, committing each verdict as it is decided; a block-less reply to the
    repair prompt is settled as runs/no_proof.py says (a probe per problem, at most)."""

    def __init__(
        self,
        store: RunStore,
        problems: dict[str, Problem],
        timeout_of: TimeoutOf,
        judge: Judge,
        asked_for_a_block: bool,
    ) -> None:
        self.store, self.problems, self.timeout_of, self.judge = store, problems, timeout_of, judge
        self.asked = asked_for_a_block
        self.probes: dict[str, Outcome] = {}

    def check(self, rows: Sequence[Round]) -> None:
        if not rows:
            return
        futures = {self._submit(self.problems[r.problem_id], r.proof): r for r in rows}
        bar = tqdm(total=len(rows), unit="attempt", desc="checking repairs", file=sys.stderr)
        with bar:
            for future in as_completed(futures):
                r = futures[future]
                problem = self.problems[r.problem_id]
                outcome = settle_now(
                    r.generation.output, future.result(), self.asked, self._probe(problem), problem
                )
                self.store.record_round_outcome(r, outcome)
                bar.update()

    def _submit(self, problem: Problem, proof: str) -> Future[Outcome]:
        return self.judge.submit(problem, proof, self.timeout_of(problem))

    def _probe(self, problem: Problem) -> Callable[[str], Outcome]:
        def probe(text: str) -> Outcome:
            if problem.id not in self.probes:
                self.probes[problem.id] = self._submit(problem, text).result()
            return self.probes[problem.id]

        return probe


def run_with_repairs(
    run_opts: RunOptions, opts: RepairOptions, judge: Judge, warm: dict[str, SharedProcess] | None
) -> int:
    """The ordinary run (round 0, resumable as ever), then its repair rounds; how many
    repair completions this call asked for."""
    run_pipeline(run_opts, warm)
    problems = {
        p.id: p
        for p in load_benchmark(run_opts.problems, run_opts.selection).problems
        if p.prover in supported()
    }
    policy = load_policy(
        run_opts.problems, run_opts.timeout_map, run_opts.timeouts, run_opts.timeout
    )
    store = RunStore(run_opts.out)
    try:
        generated = run_repairs(opts, store, problems, policy.for_problem, judge)
        rounds, first = store.rounds(), store.results()
    finally:
        store.close()
    write_jsonl_atomically(run_opts.out / REPAIRS_FILE, [_row(r) for r in rounds])
    write_results_csv(rows_of_every_round(first, rounds), run_opts.out / "results.csv")
    return generated


def _row(r: Round) -> dict:
    o = r.outcome
    return {"problem_id": r.problem_id, "sample": r.sample, "round": r.round,
            "output": r.generation.output, "answer": r.proof,
            "proof_status": None if o is None else o.verdict.value,
            "message": None if o is None else o.message, "feedback": r.feedback,
            "prompt_tokens": r.generation.prompt_tokens,
            "completion_tokens": r.generation.completion_tokens}  # fmt: skip
