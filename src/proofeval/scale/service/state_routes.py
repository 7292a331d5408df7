"""Proof states over HTTP: sessions of the Python API's StateSession, named by random
ids that are capabilities (with the service's bearer token, when it has one).

    POST   /states                      {budget?}                -> {session}
    POST   /states/{session}/start      {problem}                -> {state}
    POST   /states/{session}/apply      {state, tactic, timeout?} -> {state} | {error, goals}
    POST   /states/{session}/search     {problem, pattern, limit?} -> {theorems} | {error}
    POST   /states/{session}/release    {state}                  -> {released}
    POST   /states/{session}/finish     {state}                  -> {verdict, ..., proof, feedback}
    DELETE /states/{session}                                     -> {closed}
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.scale.sessions import States
from proofeval.states import Budget, StateSession, StepError

MAX_SESSIONS = 64


class BudgetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(default=1000, gt=0, le=100_000)
    seconds: float = Field(default=600.0, gt=0, le=86_400)
    live: int = Field(default=1000, gt=0, le=10_000)
    step_timeout: float = Field(default=30.0, gt=0, le=600)


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    budget: BudgetIn = BudgetIn()


class StartIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    problem: Any


class ApplyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: str = Field(max_length=100)
    tactic: str = Field(max_length=100_000)
    timeout: float | None = Field(default=None, gt=0)


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    problem: Any
    pattern: str = Field(max_length=10_000)
    limit: int = Field(default=20, gt=0, le=200)


class StateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: str = Field(max_length=100)


def add_state_routes(
    app: FastAPI,
    states: States,
    memory_mb: int,
    problem_of: Callable[[Any], Problem],
    refuse: Callable[[int, str], Exception],
    authorize: Callable[[Request], None],
) -> Callable[[], None]:
    """The routes above on `app`, and what closes their sessions. `problem_of`: a
    request's problem (inline or by benchmark id) under the service's rules;
    `refuse(status, why)`: the exception that answers with that status; `authorize`:
    the service's token check."""
    sessions: dict[str, StateSession] = {}
    lock = threading.Lock()

    async def body(request: Request, model: type[BaseModel]) -> Any:
        authorize(request)
        try:
            return model.model_validate_json(await request.body() or b"{}")
        except ValidationError as exc:
            raise refuse(422, str(exc.errors(include_url=False)[:3])) from None

    def session_of(sid: str) -> StateSession:
        with lock:
            found = sessions.get(sid)
        if found is None:
            raise refuse(404, "no such session")
        return found

    async def run(fn: Callable[[], Any]) -> Any:
        try:
            return await asyncio.to_thread(fn)
        except InputError as exc:  # a budget, an unknown state, a closed session
            raise refuse(409, str(exc)) from None

    @app.post("/states")
    async def open_session(request: Request) -> dict:
        given: SessionIn = await body(request, SessionIn)
        budget = Budget(**given.budget.model_dump(), memory_mb=memory_mb)
        with lock:
            if len(sessions) >= MAX_SESSIONS:
                raise refuse(429, f"at most {MAX_SESSIONS} sessions at once: close one")
            sid = secrets.token_urlsafe(24)
            sessions[sid] = states.session(budget)
        return {"session": sid}

    @app.post("/states/{sid}/start")
    async def start(sid: str, request: Request) -> dict:
        given: StartIn = await body(request, StartIn)
        session, problem = session_of(sid), problem_of(given.problem)
        return {"state": (await run(lambda: session.start(problem))).as_dict()}

    @app.post("/states/{sid}/apply")
    async def apply(sid: str, request: Request) -> dict:
        given: ApplyIn = await body(request, ApplyIn)
        session = session_of(sid)
        result = await run(lambda: session.apply(given.state, given.tactic, given.timeout))
        if isinstance(result, StepError):
            return {"error": result.as_dict(), "goals": list(result.state.goals)}
        return {"state": result.as_dict()}

    @app.post("/states/{sid}/search")
    async def search(sid: str, request: Request) -> dict:
        given: SearchIn = await body(request, SearchIn)
        session, problem = session_of(sid), problem_of(given.problem)
        found = await run(lambda: session.search(problem, given.pattern, given.limit))
        if isinstance(found, StepError):
            return {"error": found.as_dict()}
        return {"theorems": found}

    @app.post("/states/{sid}/release")
    async def release(sid: str, request: Request) -> dict:
        given: StateIn = await body(request, StateIn)
        session = session_of(sid)
        await run(lambda: session.release(given.state))
        return {"released": given.state}

    @app.post("/states/{sid}/finish")
    async def finish(sid: str, request: Request) -> dict:
        given: StateIn = await body(request, StateIn)
        session = session_of(sid)
        done = await run(lambda: session.finish(given.state))
        o = done.outcome
        return {"verdict": o.verdict.value, "stage": o.stage.value, "seconds": o.seconds,
                "message": o.message, "proof": done.proof,
                "feedback": done.feedback.as_dict() if done.feedback else None}  # fmt: skip

    @app.delete("/states/{sid}")
    async def close(sid: str, request: Request) -> dict:
        authorize(request)
        session = session_of(sid)
        with lock:
            sessions.pop(sid, None)
        await asyncio.to_thread(session.close)
        return {"closed": sid}

    def end() -> None:
        with lock:
            for session in sessions.values():
                session.close()
            sessions.clear()
        states.close()

    return end
