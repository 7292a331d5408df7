"""`run --agent`: the model proves each problem by calling the checker as tools
(OpenAI-compatible function calling): check, start_state, apply_tactic, search_theorems,
submit. Each (problem, sample) is one conversation under a budget of tool calls, tokens
and wall time; every model turn and tool call is kept in the store's agent_steps.

The verdict is the ordinary checker's on what the model submits (a conversation that ends
without a submit is a FAIL that says so); the submitted proof is the sample's attempt and
the whole conversation its generation (tokens summed), so `proofeval report` reports an
agentic run like any other. Hostile calls (an unknown tool, arguments that are not a JSON
object, a denied tactic, a spent budget) are answered as tool errors; the run goes on.
A conversation cut short by a kill has no verdict and starts again on the next run.
Ctrl-C or SIGTERM returns at once: no conversation starts or writes to the store after it,
and none is waited for (a model's reply can take minutes).
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from proofeval.files import write_jsonl_atomically
from proofeval.generate.chat import ChatClient, ChatTurn, ToolCall
from proofeval.generate.client import Generator, SamplingSettings
from proofeval.generate.prompts import render
from proofeval.generate.reply import MalformedReply
from proofeval.loaders import Selection, load_benchmark
from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict
from proofeval.provers.registry import supported
from proofeval.runs import manifest
from proofeval.store import RunStore

TRANSCRIPTS = "agent-transcripts.jsonl"
RESULT_LIMIT = 20_000  # characters of a tool result sent back to the model
INSTRUCTIONS = (
    "\n\nYou have tools that run the real checker: check a whole proof, start a proof state "
    "and apply tactics to it, search the context's theorems. When you have a proof, call "
    "submit with it (or with the state whose steps prove the goal): only the submitted "
    "proof counts, and you can submit once."
)


class Toolbox(Protocol):
    """The tools of one conversation about one problem (agents/toolbox.py)."""

    def specs(self) -> list[dict]: ...

    def call(self, name: str, arguments: dict) -> dict: ...

    @property
    def submitted(self) -> tuple[str, Outcome] | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class AgentBudget:
    tool_calls: int = 40
    tokens: int = 200_000
    seconds: float = 900.0


@dataclass(frozen=True)
class AgentOptions:
    problems: Path
    out: Path
    sampling: SamplingSettings
    budget: AgentBudget = AgentBudget()
    template: str | None = None
    selection: Selection = Selection()  # --only, --limit
    # the run's identity and provenance (runs/manifest.py); None: not recorded
    record: tuple[dict, dict] | None = None


@dataclass
class _Spent:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop: str = ""  # why the conversation ended without a submit

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def run_agent(opts: AgentOptions, toolbox: Callable[[Problem], Toolbox]) -> int:
    """A conversation for each (problem, sample) without a verdict; how many ran."""
    problems = [
        p for p in load_benchmark(opts.problems, opts.selection).problems if p.prover in supported()
    ]
    store = RunStore(opts.out)
    try:
        if opts.record is not None:  # before any request: a resume that would mix is refused
            manifest.begin(store, *opts.record)
        store.add_problems(problems)
        done = {(a.problem_id, a.index) for a in store.attempts() if store.outcome(a)}
        todo = [(p, i) for p in problems for i in range(opts.sampling.samples)
                if (p.id, i) not in done]  # fmt: skip
        if todo:  # before any conversation starts a prover: a wrong endpoint at once
            Generator(opts.sampling).preflight()
        conversation = _Conversation(opts, store, ChatClient(opts.sampling), toolbox)
        bar = tqdm(total=len(todo), unit="conversation", desc="agent", file=sys.stderr)
        _converse_all(conversation, todo, opts.sampling.concurrency, bar.update)
        bar.close()
        steps = store.agent_steps()
        if opts.record is not None:
            manifest.end(store)
    finally:
        store.close()
    rows = [{"problem_id": pid, "sample": sample, "step": step, "kind": kind, "seconds": sec,
             **body} for pid, sample, step, kind, body, sec in steps]  # fmt: skip
    write_jsonl_atomically(opts.out / TRANSCRIPTS, rows)
    return len(todo)


def _converse_all(
    conversation: _Conversation, todo: list[tuple[Problem, int]], workers: int,
    ended_one: Callable[[], object],
) -> None:  # fmt: skip
    """Each conversation on daemon threads, `workers` at once. On an interrupt or a
    failure it returns at once and the conversations still running are cut off: a
    thread pool would wait for their replies and then run every queued one."""
    waiting: queue.SimpleQueue[tuple[Problem, int]] = queue.SimpleQueue()
    for item in todo:
        waiting.put(item)
    ended: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()

    def work() -> None:
        while not conversation.stopped:
            try:
                item = waiting.get_nowait()
            except queue.Empty:
                return
            try:
                conversation.run(*item)
                ended.put(None)
            except BaseException as exc:  # reported to the caller, unless it has left
                ended.put(exc)

    for _ in range(max(1, min(workers, len(todo)))):
        threading.Thread(target=work, name="proofeval-agent", daemon=True).start()
    try:
        for _ in todo:
            failure = ended.get()
            if failure is not None:
                raise failure
            ended_one()
    finally:
        conversation.stop()


class _Stopped(Exception):
    """The run was stopped: this conversation writes nothing more."""


class _Conversation:
    def __init__(self, opts: AgentOptions, store: RunStore, client: ChatClient, toolbox) -> None:
        self.opts = opts
        self.store = store
        self.client = client
        self.toolbox = toolbox
        self._gate = threading.Lock()
        self.stopped = False
        self._open: set[Toolbox] = set()  # the running conversations' tools

    def stop(self) -> None:
        """No write after this returns, and every conversation's tools closed (their
        provers' processes and scratch): the store and the checker can be closed."""
        with self._gate:
            self.stopped = True
            boxes, self._open = self._open, set()
        for box in boxes:
            box.close()

    @contextmanager
    def _writing(self) -> Iterator[RunStore]:
        with self._gate:
            if self.stopped:
                raise _Stopped
            yield self.store

    def run(self, problem: Problem, sample: int) -> None:
        with self._writing() as store:
            store.forget_agent_steps(problem.id, sample)  # what a killed run left
        prompt = render(self.opts.template, problem) + INSTRUCTIONS
        box = self.toolbox(problem)
        started = time.monotonic()
        try:
            with self._writing():
                self._open.add(box)
            spent, last = self._talk(problem, sample, prompt, box, started)
            submitted = box.submitted
        finally:
            with self._gate:
                self._open.discard(box)
            box.close()
        proof, outcome = submitted or ("", _unsubmitted(spent))
        gen = Generation(problem.id, sample, prompt, last, self.opts.sampling.model,
                         spent.prompt_tokens, spent.completion_tokens,
                         time.monotonic() - started)  # fmt: skip
        attempt = Attempt(problem.id, sample, last, proof)
        with self._writing() as store:
            store.record_generation(gen)
            store.add_attempts([attempt])
            store.record(attempt, outcome)

    def _talk(
        self, problem: Problem, sample: int, prompt: str, box: Toolbox, started: float
    ) -> tuple[_Spent, str]:
        budget = self.opts.budget
        messages: list[dict] = [{"role": "user", "content": prompt}]
        spent, last = _Spent(), ""
        while box.submitted is None:
            if spent.tokens >= budget.tokens:
                spent.stop = f"the budget of {budget.tokens} tokens is spent"
                break
            if time.monotonic() - started >= budget.seconds:
                spent.stop = f"the budget of {budget.seconds:g} s is spent"
                break
            turn = self._ask(problem, sample, messages, box, spent)
            if turn is None:
                break
            last = turn.content or last
            messages.append(turn.message())
            if not turn.tool_calls:
                spent.stop = "the model stopped calling tools"
                break
            for call in turn.tool_calls:
                result = self._tool(problem, sample, box, call, spent, started)
                text = json.dumps(result)[:RESULT_LIMIT]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            if spent.calls >= budget.tool_calls and box.submitted is None:
                spent.stop = f"the budget of {budget.tool_calls} tool calls is spent"
                break
        return spent, last

    def _ask(
        self, problem: Problem, sample: int, messages: list[dict], box: Toolbox, spent: _Spent
    ) -> ChatTurn | None:
        try:
            turn = self.client.ask(messages, box.specs())
        except MalformedReply as exc:
            spent.stop = f"malformed reply: {exc}"
            with self._writing() as store:
                store.record_agent_step(problem.id, sample, "error", {"error": spent.stop}, 0)
            return None
        spent.prompt_tokens += turn.prompt_tokens
        spent.completion_tokens += turn.completion_tokens
        body = turn.message() | {"prompt_tokens": turn.prompt_tokens,
                                 "completion_tokens": turn.completion_tokens}  # fmt: skip
        with self._writing() as store:
            store.record_agent_step(problem.id, sample, "model", body, turn.seconds)
        return turn

    def _tool(
        self, problem: Problem, sample: int, box: Toolbox, call: ToolCall, spent: _Spent,
        started: float,
    ) -> dict:  # fmt: skip
        begun = time.monotonic()
        result = _dispatch(box, call, spent, self.opts.budget, started)
        seconds = time.monotonic() - begun
        body = {"id": call.id, "name": call.name, "arguments": call.arguments, "result": result}
        with self._writing() as store:
            store.record_agent_step(problem.id, sample, "tool", body, seconds)
        return result


def _dispatch(
    box: Toolbox, call: ToolCall, spent: _Spent, budget: AgentBudget, started: float
) -> dict:
    """A tool call's result; every refusal is an error result, never an exception."""
    spent.calls += 1
    if spent.calls > budget.tool_calls:
        return {"error": f"the budget of {budget.tool_calls} tool calls is spent"}
    if time.monotonic() - started >= budget.seconds:
        return {"error": f"the budget of {budget.seconds:g} s is spent"}
    if box.submitted is not None:
        return {"error": "a proof was already submitted"}
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        return {"error": f"the arguments are not valid JSON: {exc.msg}"}
    if not isinstance(arguments, dict):
        return {"error": "the arguments must be a JSON object"}
    return box.call(call.name, arguments)


def _unsubmitted(spent: _Spent) -> Outcome:
    why = spent.stop or "the conversation ended"
    return Outcome(Verdict.FAIL, Stage.EXTRACT, 0.0, f"no proof submitted: {why}")
