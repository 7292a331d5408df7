"""The checking service: HTTP over one proofeval.Checker, adding nothing to its verdicts.

POST /check takes a batch of (problem, proof) and answers one verdict per item, in
order; GET /health says whether it is ready, and which provers and contexts are;
GET /metrics is for Prometheus; /states/... are proof-state sessions (state_routes.py);
GET /openapi.json describes them all. A bearer token, when set, is required by all but
/health and /openapi.json. Every error answers {"error": {code, message, details}}
(errors.py). Slow and surplus connections are closed below the app (connections.py)."""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable, Mapping
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
from proofeval.scale.service import errors
from proofeval.scale.service.connections import ConnectionGuard, ConnectionLimits
from proofeval.scale.service.errors import ErrorReply, Refused, invalid
from proofeval.scale.service.metrics import Metrics
from proofeval.scale.service.openapi import Bodies
from proofeval.scale.service.schema import Reply, VerdictReply, verdict_reply
from proofeval.scale.service.state_routes import add_state_routes
from proofeval.scale.service.warmup import Warmup
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


class CheckReply(Reply):
    results: list[VerdictReply] = Field(description="one per item, in order")


class HealthReply(Reply):
    status: str = Field(description="starting, ready (200), failed or draining (503)")
    provers: dict[str, dict] = Field(description="each prover: status, seconds, reason")
    contexts: dict[str, dict] = Field(
        description="each --bench context warmed at start: its problem, prover, status, "
        "seconds, reason"
    )
    reasons: dict[str, str] = Field(default={}, description="why provers failed")


# what every route may refuse with, for the OpenAPI
REFUSALS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorReply, "description": errors.CODES[status].replace("_", " ")}
    for status in (401, 404, 409, 413, 422, 429, 503)
}


@dataclass
class ServiceConfig:
    """token: required as `Authorization: Bearer ...` when set. bench: the problems
    items may name by id (with their timeouts); bench_only: refuse problems given inline;
    client_header_code: run the headers of inline problems as the code they are, where
    the prover's rule admits only loads of its own files (registry.client_header).
    provers: those warmed up before ready.
    connections: the deadlines and bound of service/connections.py.
    version: what /openapi.json says (`proofeval serve` gives its revision too)."""

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
    version: str = "proofeval"


def create_app(
    checker: Checker,
    config: ServiceConfig,
    guard: ConnectionGuard | None = None,
    say: Callable[[str], None] = lambda _message: None,
) -> FastAPI:
    """The service over `checker`, which it closes (draining its work) on shutdown;
    /metrics shows the connections of `guard` when given; `say`: the warm-up's progress."""
    metrics = Metrics(guard)
    states = States(checker)
    warmup = Warmup(
        checker.warm_up, states.session, config.bench.values(), config.provers, say,
        close_sessions=True,
    )  # fmt: skip
    draining = asyncio.Event()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        warmup.start()
        yield
        draining.set()
        await asyncio.to_thread(close_states)
        await asyncio.to_thread(checker.close)
        warmup.close()

    app = FastAPI(
        title="proofeval",
        version=config.version,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        responses={500: {"model": ErrorReply, "description": "internal error"}},
    )
    errors.install(app, metrics.refuse)
    bodies = Bodies()
    bodies.install(app)

    @app.get("/health", response_model=HealthReply, responses={503: {"model": HealthReply}})
    async def health() -> JSONResponse:
        body = _health(warmup, draining.is_set())
        return JSONResponse(body, 200 if body["status"] == "ready" else 503)

    @app.get("/metrics", response_class=PlainTextResponse, responses=REFUSALS)
    async def prometheus(request: Request) -> PlainTextResponse:
        _authorize(request, config.token)
        return PlainTextResponse(
            metrics.render(checker.stats()), media_type="text/plain; version=0.0.4"
        )

    @app.post(
        "/check",
        response_model=CheckReply,
        responses=REFUSALS,
        openapi_extra=bodies.body(CheckIn),
    )
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
                "queue_full",
                headers={"Retry-After": str(config.retry_after)},
            )
        try:
            futures = checker.submit(items, timeout, extract)
        except InputError as exc:  # the checker is closing
            raise Refused(503, str(exc), "closing") from None
        # cancelling this cancels the futures: attempts not started are dropped
        task = asyncio.ensure_future(asyncio.gather(*map(asyncio.wrap_future, futures)))
        outcomes = await _unless_disconnected(request, task)
        if outcomes is None:
            return Response(status_code=499)  # nobody reads it
        metrics.answered(outcomes, time.perf_counter() - start)
        results = [verdict_reply(o) for o in outcomes]
        if explain:
            found = await asyncio.to_thread(states.explain, items, outcomes)
            for result, feedback in zip(results, found, strict=True):
                if feedback is not None:
                    result["feedback"] = feedback.as_dict()
        return JSONResponse({"results": results})

    close_states = add_state_routes(
        app,
        states,
        checker.settings.memory_mb,
        lambda given: _given_problem(given, config, checker.settings),
        lambda request: _authorize(request, config.token),
        lambda model, reply: (
            {"response_model": reply, "responses": REFUSALS}
            | ({"openapi_extra": bodies.body(model)} if model else {})
        ),
    )
    return app


def _health(warmup: Warmup, draining: bool) -> dict[str, Any]:
    """ready once every prover has started and every --bench context warmed at start has
    loaded or failed (its problems' attempts then say why); failed if a prover did not
    start."""
    shown = warmup.as_json()
    failed = {n: p["reason"] for n, p in shown["provers"].items() if p["status"] == "failed"}
    if draining:
        status = "draining"
    elif failed:
        status = "failed"
    else:
        status = "ready" if warmup.finished() else "starting"
    return {"status": status, **shown} | ({"reasons": failed} if failed else {})


def _given_problem(given: object, config: ServiceConfig, settings: CheckSettings) -> Problem:
    """A proof state's problem: a --bench id, or one given inline (as /check's items)."""
    if not isinstance(given, str):
        try:
            given = ProblemIn.model_validate(given)
        except ValidationError as exc:
            raise invalid(exc, "problem") from None
    return _problem(0, given, config, settings)


def _authorize(request: Request, token: str | None) -> None:
    if token is None:
        return
    given = request.headers.get("authorization", "").encode()
    if not hmac.compare_digest(given, f"Bearer {token}".encode()):
        raise Refused(401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"})


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
        raise invalid(exc) from None
    if len(request.items) > config.max_batch:
        raise Refused(422, f"at most {config.max_batch} items per request", "too_many_items")
    if request.timeout is not None and request.timeout > config.max_timeout:
        raise Refused(422, f"timeout: at most {config.max_timeout} seconds", "timeout_too_long")
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
            raise Refused(422, f"items[{n}]: no problem {given!r} in the benchmark",
                          "unknown_problem", details={"item": n})  # fmt: skip
        if found.prover not in supported():
            raise Refused(422, f"items[{n}]: no checker for prover {found.prover!r}",
                          "no_checker", details={"item": n})  # fmt: skip
        return found
    if config.bench_only:
        raise Refused(422, f"items[{n}]: this service checks only its benchmark's problems",
                      "bench_only", details={"item": n})  # fmt: skip
    # A prover proofeval cannot check (a misspelt name) is that item's ERROR, from the
    # checker; one it checks but this service does not serve refuses the request.
    if canonical(given.prover) in supported() and canonical(given.prover) not in config.provers:
        raise Refused(
            422,
            f"items[{n}]: prover {given.prover!r} (this service checks: "
            f"{', '.join(config.provers)})",
            "prover_not_served",
            details={"item": n},
        )
    if given.timeout is not None and given.timeout > config.max_timeout:
        raise Refused(422, f"items[{n}]: timeout: at most {config.max_timeout} seconds",
                      "timeout_too_long", details={"item": n})  # fmt: skip
    header = given.header
    if not config.client_header_code:
        try:
            header = client_header(given.prover, header, settings)
        except InputError as exc:
            raise Refused(422, f"items[{n}]: {exc}", "header_refused",
                          details={"item": n}) from None  # fmt: skip
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
