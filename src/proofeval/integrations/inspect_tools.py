"""Proof-state tools for inspect_ai agents, over proofeval's shared tool layer
(agents/tools.py, the one MCP serves): start a state, apply a tactic, read a state's
goals, search the context's theorems, check a whole proof, submit. The same guarantees
as MCP: every call is bounded (checks, steps, seconds, live states, text sizes), refused
calls are errors the model sees, each call is logged to RUN_DIR/mcp-calls.jsonl, and
the only verdict that counts is the ordinary checker's on the one submitted proof."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessageSystem
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolError

from proofeval.agents.toolbox import AgentToolbox
from proofeval.agents.tools import DESCRIPTIONS, Limits
from proofeval.errors import CheckerError, InputError
from proofeval.integrations.inspect_scorer import AGENT, PROBLEM, SUBMITTED
from proofeval.integrations.verifier import default_verifier, problem_from
from proofeval.model import Problem
from proofeval.runs.agent import INSTRUCTIONS
from proofeval.scale.sessions import States
from proofeval.states import Budget


class Box:
    """One sample's tools: an AgentToolbox (its own budgeted state session) and the
    submitted verdict."""

    def __init__(self, toolbox: AgentToolbox) -> None:
        self.toolbox = toolbox
        self.submitted: dict | None = None
        self._lock = threading.Lock()

    async def call(self, name: str, arguments: dict) -> str:
        logged = self.toolbox.tools.logged(name, lambda **a: self._call(name, a))
        try:
            result = await anyio.to_thread.run_sync(lambda: logged(**arguments))
        except (InputError, CheckerError) as exc:
            raise ToolError(str(exc)) from None
        return json.dumps(result)

    def _call(self, name: str, arguments: dict) -> dict:
        if name == "goals":
            return self.toolbox.session.state(str(arguments["state_id"])).as_dict()
        with self._lock:
            if name == "submit" and self.submitted is not None:
                raise InputError("a proof was already submitted: only one submit counts")
            result = self.toolbox.call(name, arguments)
            if isinstance(result.get("error"), str):  # a refused call, not the prover's reply
                raise InputError(result["error"])
            if name == "submit":
                self.submitted = result
            return result


# Each tool's parameters, described for the model (the tools' own descriptions are the
# shared layer's, agents/tools.py; the problem is implicit: a sample is one problem).
PARAMETERS: dict[str, dict[str, str]] = {
    "start_state": {},
    "apply_tactic": {"state_id": "the state's id, from start_state or apply_tactic",
                     "tactic": "the tactic (HOL Light: a tactic expression; Coq: sentences)"},
    "goals": {"state_id": "the state's id"},
    "search_theorems": {"pattern": "what to search for", "limit": "at most this many"},
    "check": {"proof": "the whole proof"},
    "submit": {"proof": "the proof as text", "state_id": "or the state whose path proves it"},
}  # fmt: skip
GOALS = "A proof state's goals, whether it is solved, and the steps that led to it."


def _start_state(box: Box) -> Any:
    async def start_state() -> str:
        return await box.call("start_state", {})

    return start_state


def _apply_tactic(box: Box) -> Any:
    async def apply_tactic(state_id: str, tactic: str) -> str:
        return await box.call("apply_tactic", {"state_id": state_id, "tactic": tactic})

    return apply_tactic


def _goals(box: Box) -> Any:
    async def goals(state_id: str) -> str:
        return await box.call("goals", {"state_id": state_id})

    return goals


def _search_theorems(box: Box) -> Any:
    async def search_theorems(pattern: str, limit: int = 20) -> str:
        return await box.call("search_theorems", {"pattern": pattern, "limit": limit})

    return search_theorems


def _check(box: Box) -> Any:
    async def check(proof: str) -> str:
        return await box.call("check", {"proof": proof})

    return check


def _submit(box: Box) -> Any:
    async def submit(proof: str = "", state_id: str = "") -> str:
        return await box.call("submit", {"proof": proof, "state_id": state_id})

    return submit


MAKERS = (_start_state, _apply_tactic, _goals, _search_theorems, _check, _submit)


def state_tools(box: Box) -> list[Tool]:
    """The tools of one sample's box, for `use_tools` or a react() agent; run one at a
    time (they share the sample's state session)."""
    tools = []
    for make in MAKERS:
        fn = make(box)
        name = fn.__name__
        described = ToolDef(fn, name=name, description=DESCRIPTIONS.get(name, GOALS),
                            parameters=PARAMETERS[name], parallel=False)  # fmt: skip
        tools.append(described.as_tool())
    return tools


class Toolboxes:
    """Opens each sample's Box on the default verifier's local Checker: one States (the
    provers' shared parts) for all of them, each with its own budgeted session."""

    def __init__(self, limits: Limits, run_dir: Path) -> None:
        self.limits = limits
        self.run_dir = run_dir
        self._states: States | None = None
        self._lock = threading.Lock()

    def open(self, problem: Problem) -> Box:
        checker = default_verifier().local
        if checker is None:
            raise InputError("proof-state tools need a local Checker, not a service")
        with self._lock:
            if self._states is None or self._states.checker is not checker:
                if self._states is not None:  # the default verifier changed: a new Checker
                    self._states.close()
                self._states = States(checker)
            session = self._states.session(self.limits.budget)
        return Box(AgentToolbox(problem, checker, session, self.run_dir, self.limits))


@solver
def prove_with_tools(
    max_checks: int = 20, max_steps: int = 200, step_timeout: float = 30.0,
    timeout: float = 60.0, out: str = "",
) -> Solver:  # fmt: skip
    """An agent that proves the sample's problem with the state tools: the model calls
    them until it stops (inspect's tool loop, bounded by the task's message_limit); the
    first submit's verdict is the sample's. `out`: where the calls are logged and
    submitted proofs kept (a new temporary directory by default)."""
    budget = Budget(steps=max_steps, step_timeout=step_timeout)
    limits = Limits(checks=max_checks, timeout=timeout, budget=budget)
    run_dir = Path(out) if out else Path(tempfile.mkdtemp(prefix="proofeval-inspect-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    boxes = Toolboxes(limits, run_dir)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        box = await anyio.to_thread.run_sync(
            lambda: boxes.open(problem_from(state.metadata[PROBLEM]))
        )
        state.store.set(AGENT, True)
        state.messages.insert(0, ChatMessageSystem(content=INSTRUCTIONS.strip()))
        state.tools = state_tools(box)
        try:
            state = await generate(state, tool_calls="loop")
        finally:
            if box.submitted is not None:
                state.store.set(SUBMITTED, _kept(box.submitted))
            await anyio.to_thread.run_sync(box.toolbox.close)
        return state

    return solve


def _kept(reply: dict[str, Any]) -> dict[str, Any]:
    keys = ("proof", "verdict", "stage", "seconds", "message")
    return {k: reply[k] for k in keys}
