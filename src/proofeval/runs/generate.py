"""`proofeval generate`: ask a model for proofs of a benchmark's problems, resumably.

Each completion is committed to RUN_DIR's store as it arrives, with its attempt (the proof
extracted from it), so a re-run asks only for the (problem, sample) pairs still missing.
At the end every attempt is written to an answers JSONL that `proofeval check --answers`
reads: problem_id, sample, output (and its NeMo-Skills name, generation), answer (the
extracted proof), model, tokens and seconds.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from proofeval.files import write_jsonl_atomically
from proofeval.generate.client import Generator, SamplingSettings
from proofeval.generate.extract import Block, extract
from proofeval.generate.prompts import render
from proofeval.loaders import Selection, load_benchmark
from proofeval.model import Attempt, Generation, Problem, Verdict
from proofeval.store import RunStore

ANSWERS_FILE = "answers.jsonl"

Request = tuple[Problem, str, list[int]]


@dataclass(frozen=True)
class Extraction:
    """How the proof is taken out of a completion (see generate.extract)."""

    block: Block = "last"
    marker: str | None = None

    def attempt(self, gen: Generation, problem: Problem) -> Attempt:
        proof = extract(
            gen.output, problem.prover, self.block, self.marker, statement=problem.statement
        )
        return Attempt(gen.problem_id, gen.sample, gen.output, proof)


@dataclass(frozen=True)
class GenerateOptions:
    problems: Path
    out: Path
    sampling: SamplingSettings
    template: str | None = None
    extraction: Extraction = Extraction()
    answers_out: Path | None = None
    selection: Selection = Selection()  # --only, --limit


@dataclass(frozen=True)
class GenerateSummary:
    problems: int
    generated: int  # by this run
    total: int  # in the store, for these problems
    answers: Path


def missing_requests(
    problems: Iterable[Problem],
    have: set[tuple[str, int]],
    samples: int,
    template: str | None,
) -> list[Request]:
    """(problem, prompt, sample indices below `samples` not in `have`) for each problem that
    lacks some; prompts are rendered here, so a template error stops before any request."""
    requests = []
    for p in problems:
        missing = [i for i in range(samples) if (p.id, i) not in have]
        if missing:
            requests.append((p, render(template, p), missing))
    return requests


def run_generate(opts: GenerateOptions) -> GenerateSummary:
    problems = load_benchmark(opts.problems, opts.selection).problems
    by_id = {p.id: p for p in problems}
    store = RunStore(opts.out)
    try:
        store.add_problems(problems)
        earlier = [g for g in store.generations() if g.problem_id in by_id]
        # Earlier completions get their attempts again: the extraction options may differ.
        store.add_attempts(opts.extraction.attempt(g, by_id[g.problem_id]) for g in earlier)
        have = {(g.problem_id, g.sample) for g in earlier}
        requests = missing_requests(problems, have, opts.sampling.samples, opts.template)
        failure: Exception | None = None
        try:
            generated = _generate(opts, store, by_id, requests)
        except Exception as exc:  # still write out what did arrive, then report it
            failure, generated = exc, 0
        generations = [g for g in store.generations() if g.problem_id in by_id]
    finally:
        store.close()
    answers = opts.answers_out or opts.out / ANSWERS_FILE
    write_answers(answers, generations, by_id, opts.extraction)
    if failure is not None:
        raise failure
    return GenerateSummary(len(problems), generated, len(generations), answers)


def _generate(
    opts: GenerateOptions, store: RunStore, problems: dict[str, Problem], requests: list[Request]
) -> int:
    """Ask for what is missing, recording each completion as it arrives; how many arrived."""

    def arrived(gen: Generation) -> None:
        store.record_generation(gen)
        store.add_attempts([opts.extraction.attempt(gen, problems[gen.problem_id])])

    return ask_all(opts.sampling, requests, arrived, "generating")


def ask_all(
    sampling: SamplingSettings,
    requests: list[Request],
    arrived: Callable[[Generation], None],
    desc: str,
) -> int:
    """Ask for every completion of `requests`, handing each to `arrived` as it comes,
    with a progress bar; how many arrived."""
    total = sum(len(samples) for _, _, samples in requests)
    if total == 0:
        return 0
    bar = tqdm(total=total, unit="completion", desc=desc, file=sys.stderr)
    lock = threading.Lock()

    def counted(gen: Generation) -> None:
        arrived(gen)
        with lock:
            bar.update()

    generator = Generator(sampling)
    try:
        generator.generate(requests, counted)
    finally:
        generator.cancel()
        bar.close()
    return bar.n


def answer_rows(
    generations: Iterable[Generation],
    problems: dict[str, Problem],
    extraction: Extraction,
    verdicts: Mapping[tuple[str, int], Verdict | None] | None = None,
) -> list[dict]:
    """One answers-JSONL object per completion, in benchmark order, then by sample; with
    `verdicts` (from `run`), each with its verdict as proof_status (null: unchecked)."""
    order = {pid: i for i, pid in enumerate(problems)}
    rows = []
    for g in sorted(generations, key=lambda g: (order[g.problem_id], g.sample)):
        attempt = extraction.attempt(g, problems[g.problem_id])
        row = {
            "problem_id": g.problem_id,
            "sample": g.sample,
            "output": g.output,
            "generation": g.output,
            "answer": attempt.proof,
            "model": g.model,
            "prompt_tokens": g.prompt_tokens,
            "completion_tokens": g.completion_tokens,
            "seconds": round(g.seconds, 3),
        }
        if verdicts is not None:
            verdict = verdicts.get((g.problem_id, g.sample))
            row["proof_status"] = None if verdict is None else verdict.value
        rows.append(row)
    return rows


def write_answers(
    path: Path,
    generations: Iterable[Generation],
    problems: dict[str, Problem],
    extraction: Extraction,
    verdicts: Mapping[tuple[str, int], Verdict | None] | None = None,
) -> None:
    rows = answer_rows(generations, problems, extraction, verdicts)
    write_jsonl_atomically(path, rows)
