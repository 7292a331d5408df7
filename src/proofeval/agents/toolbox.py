"""The agent tools (tools.py) as function-calling tools for `run --agent`, bound to one
problem, with their descriptions and signatures as OpenAI `tools`; and a submit that ends
the conversation with the ordinary checker's verdict (kept by runs/agent.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from proofeval.agents.tools import DESCRIPTIONS, Limits, Tools, unfenced
from proofeval.errors import CheckerError, InputError
from proofeval.model import Outcome, Problem
from proofeval.scale.api import Checker
from proofeval.scale.service.schema import verdict_reply
from proofeval.states import StateSession

AGENT_TOOLS = ("check", "start_state", "apply_tactic", "search_theorems", "submit")
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
PYTHON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def tool_specs() -> list[dict]:
    """OpenAI `tools` for AGENT_TOOLS, from the MCP tools' signatures (problem_id is
    implicit: a conversation is about one problem)."""
    return [_spec(name, getattr(Tools, name)) for name in AGENT_TOOLS]


def _spec(name: str, fn: Callable[..., Any]) -> dict:
    properties, required = {}, []
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        if param.name == "problem_id":
            continue
        properties[param.name] = {"type": JSON_TYPES.get(str(param.annotation), "string")}
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters = {"type": "object", "properties": properties, "required": required}
    function = {"name": name, "description": DESCRIPTIONS[name], "parameters": parameters}
    return {"type": "function", "function": function}


SPECS = tool_specs()
PROPERTIES = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in SPECS}


def _wrong_type(name: str, arguments: dict) -> str:
    """Which argument has a JSON type other than its tool's schema says ("" if none)."""
    for key, value in arguments.items():
        want = PROPERTIES[name].get(key, {}).get("type")
        if want is None:
            continue
        ok = isinstance(value, PYTHON_TYPES[want])
        if not ok or (want != "boolean" and isinstance(value, bool)):
            return f"argument {key!r} must be a {want}"
    return ""


class AgentToolbox:
    """runs.agent.Toolbox for one conversation: its own state session (budgeted)."""

    def __init__(
        self, problem: Problem, checker: Checker, session: StateSession, run_dir: Path,
        limits: Limits,
    ) -> None:  # fmt: skip
        self.problem = problem
        self.session = session
        self.tools = Tools([problem], checker, session, run_dir, limits)
        self._submitted: tuple[str, Outcome] | None = None

    def specs(self) -> list[dict]:
        return SPECS

    @property
    def submitted(self) -> tuple[str, Outcome] | None:
        return self._submitted

    def call(self, name: str, arguments: dict) -> dict:
        if name not in AGENT_TOOLS:
            return {"error": f"no tool {name[:100]!r}; the tools: {', '.join(AGENT_TOOLS)}"}
        fn = self.submit if name == "submit" else getattr(self.tools, name)
        if name in ("check", "start_state", "search_theorems"):
            arguments = arguments | {"problem_id": self.problem.id}
        try:
            inspect.signature(fn).bind(**arguments)
        except TypeError as exc:
            return {"error": f"{name}: {exc}"}
        wrong = _wrong_type(name, arguments)
        if wrong:
            return {"error": f"{name}: {wrong}"}
        try:
            return fn(**arguments)
        except (InputError, CheckerError) as exc:  # a spent budget, an unknown state, ...
            return {"error": str(exc)}

    def submit(self, proof: str = "", state_id: str = "") -> dict:
        """The final answer, checked by the ordinary checker (as the MCP submit does)."""
        proof, outcome, feedback = self.tools.final(self.problem, proof, state_id)
        self._submitted = (proof, outcome)
        return verdict_reply(unfenced(outcome), feedback) | {"proof": proof}

    def close(self) -> None:
        self.tools.close()
        self.session.close()
