"""Model calls of a grading run, through the generation client, each kept in the store.

A method asks in waves: a list of calls, each named by (item, run, stage) with its prompt.
A call already stored with the same prompt is answered from the store (so a re-run resumes
and replays the same pipeline); the others go to the endpoint at once, `concurrency` at a
time, with the client's retries. Calls that share item, stage and prompt (the same stage of
several runs) are one request with `n` choices, which the client splits when the server
ignores `n`. A reply of the wrong shape answers its calls with a FailedCall (parsed as
Unparsed, with the reason): that grading fails, the run goes on, and nothing is stored, so
a re-run asks again.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm import tqdm

from proofeval.errors import InputError
from proofeval.generate.client import Generator, SamplingSettings
from proofeval.grading.parse import FailedCall
from proofeval.grading.store import CallRecord, GradingStore
from proofeval.model import Generation, Problem

Key = tuple[str, int, str]  # item id, run, stage


@dataclass(frozen=True)
class Call:
    item_id: str
    run: int
    stage: str
    prompt: str

    @property
    def key(self) -> Key:
        return (self.item_id, self.run, self.stage)


class Asker:
    """Answers calls from the store or the endpoint; `settings` None: the store only."""

    def __init__(self, store: GradingStore, settings: SamplingSettings | None) -> None:
        self.store = store
        self.settings = settings
        self._generator: Generator | None = None

    def ask(self, calls: Sequence[Call], desc: str) -> dict[Key, str]:
        """The output of every call, by key (a FailedCall for a malformed reply);
        GenerationError if the endpoint fails for good."""
        answers: dict[Key, str] = {}
        missing: list[Call] = []
        for call in calls:
            output = self.store.answer(*call.key, call.prompt)
            if output is not None:
                answers[call.key] = output
            else:
                missing.append(call)
        if missing:
            self._send(missing, desc, answers)
        return answers

    def _send(self, calls: list[Call], desc: str, answers: dict[Key, str]) -> None:
        if self.settings is None:
            raise InputError(f"{len(calls)} model calls are missing: give --model to make them")
        groups: dict[tuple[str, str, str], list[Call]] = {}
        for call in calls:
            groups.setdefault((call.item_id, call.stage, call.prompt), []).append(call)
        # The id names the call in the client's error messages; the number keeps apart
        # the groups of one stage whose prompts differ (a rewrite's feedback, say).
        by_id = {f"{g[0].item_id} {g[0].stage} #{i}": g for i, g in enumerate(groups.values())}
        requests = [
            (Problem(id=gid, statement=""), group[0].prompt, [c.run for c in group])
            for gid, group in by_id.items()
        ]
        bar = tqdm(total=len(calls), unit="call", desc=desc, file=sys.stderr)
        lock = threading.Lock()

        def arrived(gen: Generation) -> None:
            call = next(c for c in by_id[gen.problem_id] if c.run == gen.sample)
            self.store.record_call(
                CallRecord(
                    call.item_id,
                    call.run,
                    call.stage,
                    call.prompt,
                    gen.output,
                    gen.model,
                    gen.prompt_tokens,
                    gen.completion_tokens,
                    gen.seconds,
                )
            )
            with lock:
                answers[call.key] = gen.output
                bar.update()

        def malformed(problem: Problem, runs: tuple[int, ...], reason: str) -> None:
            with lock:
                for call in by_id[problem.id]:
                    if call.run in runs:
                        answers[call.key] = FailedCall(reason)
                        bar.update()

        generator = self._generator or Generator(self.settings)
        self._generator = generator
        try:
            generator.generate(requests, arrived, malformed)
        finally:
            bar.close()

    def close(self) -> None:
        if self._generator is not None:
            self._generator.cancel()
