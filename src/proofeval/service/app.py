"""The checking service: HTTP over one proofeval.Checker, adding nothing to its verdicts.

POST /check takes a batch of (problem, proof) and answers one verdict per item, in
order; GET /health says whether it is ready; GET /metrics is for Prometheus. A bearer
token, when set, is required by /check and /metrics."""

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

from proofeval.api import Checker, problem
from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.registry import supported
from proofeval.service.metrics import Metrics


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
    extract: StrictBool = Field(default=False, description="proofs are raw model output")


@dataclass
class ServiceConfig:
    """token: required as `Authorization: Bearer ...` when set. bench: the problems
    items may name by id (with their timeouts); bench_only: refuse problems given inline
    (their headers are code the prover runs). provers: those warmed up before ready."""

    token: str | None = None
    bench: Mapping[str, Problem] = field(default_factory=dict)
    bench_only: bool = False
    provers: tuple[str, ...] = ()
    max_body_bytes: int = 16 * 2**20
    max_batch: int = 1024
    max_queue: int = 10_000
    max_timeout: float = 600.0
    retry_after: int = 1


class Refused(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def create_app(checker: Checker, config: ServiceConfig) -> FastAPI:
    """The service over `checker`, which it closes (draining its work) on shutdown."""
    metrics = Metrics()
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
        body = await _read_limited(request, config.max_body_bytes)
        items, timeout, extract = _parse(body, config)
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
        return JSONResponse({"results": results})

    return app


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
    body: bytes, config: ServiceConfig
) -> tuple[list[tuple[Problem, str]], float | None, bool]:
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
        items.append((_problem(n, item.problem, config), item.proof))
    return items, request.timeout, request.extract


def _problem(n: int, given: ProblemIn | str, config: ServiceConfig) -> Problem:
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
    if given.prover in supported() and given.prover not in config.provers:
        raise Refused(
            422,
            f"items[{n}]: prover {given.prover!r} (this service checks: "
            f"{', '.join(config.provers)})",
        )
    if given.timeout is not None and given.timeout > config.max_timeout:
        raise Refused(422, f"items[{n}]: timeout: at most {config.max_timeout} seconds")
    return problem(given.prover, given.statement, given.header, given.timeout)


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
