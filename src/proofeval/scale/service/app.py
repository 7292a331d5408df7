"""The checking service: HTTP over one proofeval.Checker, adding nothing to its verdicts.

POST /check takes a batch of (problem, proof) and answers one verdict per item, in
order; GET /health says whether it is ready; GET /metrics is for Prometheus; /states/...
are proof-state sessions (state_routes.py). A bearer token, when set, is required by all
but /health. Slow and surplus connections are closed below the app (connections.py)."""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from starlette.requests import ClientDisconnect

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.interface import CheckSettings
from proofeval.provers.registry import canonical, client_header, supported
from proofeval.scale.api import Checker, problem
from proofeval.scale.service.connections import ConnectionGuard, ConnectionLimits
from proofeval.scale.service.metrics import Metrics
from proofeval.scale.service.state_routes import add_state_routes
from proofeval.scale.sessions import States


class ProblemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prover: str
    statement: str
    header: str = ""
    timeout: float | None = Field(default=None, gt=0)


class ItemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    problem: ProblemIn | str = Field(description="a problem, or the id of a --bench problem")
    proof: str


class CheckIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[ItemIn]
    timeout: float | None = Field(default=None, gt=0)
    feedback: bool = Field(default=False, description="a FAIL's goals and failing step")
    extract: StrictBool = Field(default=False, description="proofs are raw model output")


@dataclass
class ServiceConfig:
    """token: required as `Authorization: Bearer ...` when set. bench: the problems
    items may name by id (with their timeouts); bench_only: refuse problems given inline;
    client_header_code: run the headers of inline problems as the code they are, where
    the prover's rule admits only loads of its own files (registry.client_header).
    provers: those warmed up before ready.
    connections: the deadlines and bound of service/connections.py."""

    token: str | None = None
    bench: Mapping[str, Problem] = field(default_factory=dict)
    bench_only: bool = False
    client_header_code: bool = False
    provers: tuple[str, ...] = ()
    max_body_bytes: int = 16 * 2**20
    max_batch: int = 1024
    max_queue: int = 10_000
    max_timeout: float = 600.0
    retry_after: int = 1
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)


class Refused(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def create_app(
    checker: Checker, config: ServiceConfig, guard: ConnectionGuard | None = None
) -> FastAPI:
    """The service over `checker`, which it closes (draining its work) on shutdown;
    /metrics shows the connections of `guard` when given."""
    metrics = Metrics(guard)
    state = {"status": "starting", "reason": ""}

    def warm_up() -> None:
        wanted = set(config.provers) | {p.prover for p in config.bench.values()}
        failures = checker.warm_up(sorted(wanted))
        state.update(status="failed" if failures else "ready", reason=json.dumps(failures))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=warm_up, daemon=True).start()
        yield
        state["status"] = "draining"
        await asyncio.to_thread(close_states)
        await asyncio.to_thread(checker.close)

    app = FastAPI(title="proofeval", lifespan=lifespan, docs_url=None, redoc_url=None)

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        metrics.refuse(exc.status)
        return JSONResponse({"detail": exc.detail}, exc.status, headers=exc.headers)

    @app.get("/health")
    async def health() -> JSONResponse:
        ready = state["status"] == "ready"
        body: dict[str, Any] = {"status": state["status"]}
        if state["status"] == "failed":
            body["reasons"] = json.loads(state["reason"])
        return JSONResponse(body, 200 if ready else 503)

    @app.get("/metrics")
    async def prometheus(request: Request) -> PlainTextResponse:
        _authorize(request, config.token)
        return PlainTextResponse(
            metrics.render(checker.stats()), media_type="text/plain; version=0.0.4"
        )

    @app.post("/check")
    async def check(request: Request) -> Response:
        start = time.perf_counter()
        _authorize(request, config.token)
        try:
            body = await _read_limited(request, config.max_body_bytes)
        except ClientDisconnect:  # it left, or the guard closed it (a body too slow)
            return Response(status_code=499)  # nobody reads it
        items, timeout, explain, extract = _parse(body, config, checker.settings)
        # No await from the look at the queue to the submission: the bound is exact.
        if checker.stats().queued + len(items) > config.max_queue:
            raise Refused(
                429,
                "the queue is full: retry later",
                {"Retry-After": str(config.retry_after)},
            )
        try:
            futures = checker.submit(items, timeout, extract)
        except InputError as exc:  # the checker is closing
            raise Refused(503, str(exc)) from None
        # cancelling this cancels the futures: attempts not started are dropped
        task = asyncio.ensure_future(asyncio.gather(*map(asyncio.wrap_future, futures)))
        outcomes = await _unless_disconnected(request, task)
        if outcomes is None:
            return Response(status_code=499)  # nobody reads it
        metrics.answered(outcomes, time.perf_counter() - start)
        results = [
            {
                "verdict": o.verdict.value,
                "stage": o.stage.value,
                "seconds": o.seconds,
                "message": o.message,
            }
            for o in outcomes
        ]
        if explain:
            found = await asyncio.to_thread(states.explain, items, outcomes)
            for result, feedback in zip(results, found, strict=True):
                if feedback is not None:
                    result["feedback"] = feedback.as_dict()
        return JSONResponse({"results": results})

    states = States(checker)
    close_states = add_state_routes(
        app,
        states,
        checker.settings.memory_mb,
        lambda given: _given_problem(given, config, checker.settings),
        Refused,
        lambda request: _authorize(request, config.token),
    )
    return app


def _given_problem(given: object, config: ServiceConfig, settings: CheckSettings) -> Problem:
    """A proof state's problem: a --bench id, or one given inline (as /check's items)."""
    if not isinstance(given, str):
        try:
            given = ProblemIn.model_validate(given)
        except ValidationError as exc:
            raise Refused(422, str(exc.errors(include_url=False)[:3])) from None
    return _problem(0, given, config, settings)


def _authorize(request: Request, token: str | None) -> None:
    if token is None:
        return
    given = request.headers.get("authorization", "").encode()
    if not hmac.compare_digest(given, f"Bearer {token}".encode()):
        raise Refused(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})


async def _read_limited(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is larger than `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"the request is larger than {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"the request is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(
    body: bytes, config: ServiceConfig, settings: CheckSettings
) -> tuple[list[tuple[Problem, str]], float | None, bool, bool]:
    """The items, the call's timeout, whether to explain FAILs, whether to extract."""
    try:
        request = CheckIn.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise Refused(422, json.dumps(errors[:5])) from None
    if len(request.items) > config.max_batch:
        raise Refused(422, f"at most {config.max_batch} items per request")
    if request.timeout is not None and request.timeout > config.max_timeout:
        raise Refused(422, f"timeout: at most {config.max_timeout} seconds")
    items = []
    for n, item in enumerate(request.items):
        items.append((_problem(n, item.problem, config, settings), item.proof))
    return items, request.timeout, request.feedback, request.extract


def _problem(
    n: int, given: ProblemIn | str, config: ServiceConfig, settings: CheckSettings
) -> Problem:
    if isinstance(given, str):
        found = config.bench.get(given)
        if found is None:
            raise Refused(422, f"items[{n}]: no problem {given!r} in the benchmark")
        if found.prover not in supported():
            raise Refused(422, f"items[{n}]: no checker for prover {found.prover!r}")
        return found
    if config.bench_only:
        raise Refused(422, f"items[{n}]: this service checks only its benchmark's problems")
    # A prover proofeval cannot check (a misspelt name) is that item's ERROR, from the
    # checker; one it checks but this service does not serve refuses the request.
    if canonical(given.prover) in supported() and canonical(given.prover) not in config.provers:
        raise Refused(
            422,
            f"items[{n}]: prover {given.prover!r} (this service checks: "
            f"{', '.join(config.provers)})",
        )
    if given.timeout is not None and given.timeout > config.max_timeout:
        raise Refused(422, f"items[{n}]: timeout: at most {config.max_timeout} seconds")
    header = given.header
    if not config.client_header_code:
        try:
            header = client_header(given.prover, header, settings)
        except InputError as exc:
            raise Refused(422, f"items[{n}]: {exc}") from None
    return problem(given.prover, given.statement, header, given.timeout)


async def _unless_disconnected(request: Request, task: asyncio.Future) -> Any:
    """The task's result, or None (the task cancelled) if the client goes away first.
    Once the body is read, the next ASGI message is the client's disconnection."""
    gone = asyncio.ensure_future(request.receive())
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()  # drops its attempts not started yet
        return None
    finally:
        gone.cancel()
