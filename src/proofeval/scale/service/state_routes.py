"""Proof states over HTTP: sessions of the Python API's StateSession, named by random
ids that are capabilities (with the service's bearer token, when it has one). The
replies are the MCP tools' (agents/schema.py): a state is an object, taken back by its
id as `state_id`.

    POST   /states                      {budget?}                     -> {session}
    POST   /states/{session}/start      {problem}                     -> state
    POST   /states/{session}/apply      {state_id, tactic, timeout?}  -> state (+ error)
    POST   /states/{session}/search     {problem, pattern, limit?}    -> {theorems, more, error?}
    POST   /states/{session}/release    {state_id}                    -> {released}
    POST   /states/{session}/finish     {state_id}                    -> {verdict, ..., proof}
    DELETE /states/{session}                                          -> {closed}
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.scale.service.errors import Refused, invalid
from proofeval.scale.service.schema import (
    FinishReply,
    ReleasedReply,
    Reply,
    SearchReply,
    StateReply,
    search_reply,
    state_reply,
    verdict_reply,
)
from proofeval.scale.sessions import States
from proofeval.states import Budget, StateSession
from proofeval.states.session import BudgetExceeded, UnknownState

MAX_SESSIONS = 64
PROBLEM = "a problem {prover, statement, header?, timeout?}, or the id of a --bench problem"


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
    problem: Any = Field(description=PROBLEM)


class ApplyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state_id: str = Field(max_length=100)
    tactic: str = Field(max_length=100_000)
    timeout: float | None = Field(default=None, gt=0)


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    problem: Any = Field(description=PROBLEM)
    pattern: str = Field(max_length=10_000)
    limit: int = Field(default=20, gt=0, le=200)


class StateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state_id: str = Field(max_length=100)


class SessionReply(Reply):
    session: str = Field(description="the session's id: a capability, keep it secret")


class ClosedReply(Reply):
    closed: str


def add_state_routes(
    app: FastAPI,
    states: States,
    memory_mb: int,
    problem_of: Callable[[Any], Problem],
    authorize: Callable[[Request], None],
    described: Callable[[type[BaseModel] | None, type[Reply]], dict[str, Any]],
) -> Callable[[], None]:
    """The routes above on `app`, and what closes their sessions. `problem_of`: a
    request's problem (inline or by benchmark id) under the service's rules, or Refused;
    `authorize`: the service's token check; `described(body, reply)`: a route's OpenAPI
    (the arguments of app.post)."""
    sessions: dict[str, StateSession] = {}
    lock = threading.Lock()

    async def body(request: Request, model: type[BaseModel]) -> Any:
        authorize(request)
        try:
            return model.model_validate_json(await request.body() or b"{}")
        except ValidationError as exc:
            raise invalid(exc) from None

    def session_of(sid: str) -> StateSession:
        with lock:
            found = sessions.get(sid)
        if found is None:
            raise Refused(404, "no such session", "unknown_session")
        return found

    async def run(fn: Callable[[], Any]) -> Any:
        try:
            return await asyncio.to_thread(fn)
        except UnknownState as exc:  # released, or never this session's
            raise Refused(404, str(exc), "unknown_state") from None
        except BudgetExceeded as exc:
            raise Refused(409, str(exc), "budget_spent") from None
        except InputError as exc:  # a closed session, a prover without states
            raise Refused(409, str(exc), "conflict") from None

    @app.post("/states", **described(SessionIn, SessionReply))
    async def open_session(request: Request) -> dict:
        given: SessionIn = await body(request, SessionIn)
        budget = Budget(**given.budget.model_dump(), memory_mb=memory_mb)
        with lock:
            if len(sessions) >= MAX_SESSIONS:
                raise Refused(429, f"at most {MAX_SESSIONS} sessions at once: close one",
                              "too_many_sessions")  # fmt: skip
            sid = secrets.token_urlsafe(24)
            sessions[sid] = states.session(budget)
        return {"session": sid}

    @app.post("/states/{sid}/start", **described(StartIn, StateReply))
    async def start(sid: str, request: Request) -> Any:
        given: StartIn = await body(request, StartIn)
        session, problem = session_of(sid), problem_of(given.problem)
        return _json(state_reply(await run(lambda: session.start(problem))))

    @app.post("/states/{sid}/apply", **described(ApplyIn, StateReply))
    async def apply(sid: str, request: Request) -> Any:
        given: ApplyIn = await body(request, ApplyIn)
        session = session_of(sid)
        result = await run(lambda: session.apply(given.state_id, given.tactic, given.timeout))
        return _json(state_reply(result))

    @app.post("/states/{sid}/search", **described(SearchIn, SearchReply))
    async def search(sid: str, request: Request) -> Any:
        given: SearchIn = await body(request, SearchIn)
        session, problem = session_of(sid), problem_of(given.problem)
        found = await run(lambda: session.search_theorems(problem, given.pattern, given.limit))
        return _json(search_reply(found))

    @app.post("/states/{sid}/release", **described(StateIn, ReleasedReply))
    async def release(sid: str, request: Request) -> Any:
        given: StateIn = await body(request, StateIn)
        session = session_of(sid)
        await run(lambda: session.release(given.state_id))
        return {"released": given.state_id}

    @app.post("/states/{sid}/finish", **described(StateIn, FinishReply))
    async def finish(sid: str, request: Request) -> Any:
        given: StateIn = await body(request, StateIn)
        session = session_of(sid)
        done = await run(lambda: session.finish(given.state_id))
        return _json(verdict_reply(done.outcome, done.feedback) | {"proof": done.proof})

    @app.delete("/states/{sid}", **described(None, ClosedReply))
    async def close(sid: str, request: Request) -> Any:
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


def _json(reply: dict) -> JSONResponse:
    """The reply as it is: the model documents it, fields it does not name included."""
    return JSONResponse(reply)
