"""CheckClient: call a `proofeval serve` service, sync or async, retrying when it is busy.

client = CheckClient("http://127.0.0.1:8000", token=os.environ["PROOFEVAL_TOKEN"])
outcomes = client.check([{"problem": {"prover": "coq", "statement": "...",
                                      "header": "..."}, "proof": "..."}])
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from proofeval.errors import CheckerError
from proofeval.model import Outcome, Stage, Verdict

RETRIED = {429, 500, 502, 503, 504}


class CheckClient:
    """Items are dicts {problem: {prover, statement, header?, timeout?} or a benchmark
    problem id, proof}. A 429 or 5xx answer, or a lost connection, is retried up to
    `retries` times, after the Retry-After the service gives or a doubling back-off;
    any other refusal raises ServiceError (a CheckerError) with the service's status,
    code, message and details."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 600.0,
        retries: int = 8,
        backoff: float = 0.5,
    ) -> None:
        self.url = url.rstrip("/") + "/check"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sync: httpx.Client | None = None
        self._async: httpx.AsyncClient | None = None

    def check(
        self, items: Iterable[Mapping[str, Any]], timeout: float | None = None
    ) -> list[Outcome]:
        body = _body(items, timeout)
        if self._sync is None:
            self._sync = httpx.Client(timeout=self.timeout, headers=self.headers)
        for attempt in range(self.retries + 1):
            try:
                reply = self._sync.post(self.url, json=body)
            except httpx.TransportError as exc:
                reply = exc
            wait = self._wait(reply, attempt)
            if wait is None:
                return _outcomes(reply)  # type: ignore[arg-type]
            time.sleep(wait)
        raise AssertionError("unreachable")

    async def acheck(
        self, items: Iterable[Mapping[str, Any]], timeout: float | None = None
    ) -> list[Outcome]:
        body = _body(items, timeout)
        if self._async is None:
            self._async = httpx.AsyncClient(timeout=self.timeout, headers=self.headers)
        for attempt in range(self.retries + 1):
            try:
                reply = await self._async.post(self.url, json=body)
            except httpx.TransportError as exc:
                reply = exc
            wait = self._wait(reply, attempt)
            if wait is None:
                return _outcomes(reply)  # type: ignore[arg-type]
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def _wait(self, reply: httpx.Response | httpx.TransportError, attempt: int) -> float | None:
        """Seconds to wait before trying again; None to take this reply as it is."""
        retried = isinstance(reply, httpx.TransportError) or reply.status_code in RETRIED
        if not retried:
            return None
        if attempt >= self.retries:
            if isinstance(reply, httpx.TransportError):
                raise CheckerError(f"the checking service cannot be reached: {reply}")
            return None
        after = "" if isinstance(reply, httpx.TransportError) else reply.headers.get("retry-after")
        if after and after.isdigit():
            return float(after)
        return self.backoff * 2**attempt

    def close(self) -> None:
        """Close the sync client's connections (aclose() closes the async one's)."""
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()
            self._async = None

    def __enter__(self) -> CheckClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _body(items: Iterable[Mapping[str, Any]], timeout: float | None) -> dict[str, Any]:
    body: dict[str, Any] = {"items": [dict(item) for item in items]}
    if timeout is not None:
        body["timeout"] = timeout
    return body


class ServiceError(CheckerError):
    """The service refused a request: its HTTP status and its error's code, message and
    details ({"error": {code, message, details}})."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"the checking service refused ({status} {code}): {message}")
        self.status, self.code, self.message, self.details = status, code, message, details


def refusal(reply: httpx.Response) -> ServiceError:
    """The error of a reply that is not a 200; a body of another shape (a proxy's page)
    is its message, cut short."""
    try:
        error = reply.json()["error"]
        code, message = str(error["code"]), str(error["message"])
        details = error.get("details")
    except (ValueError, KeyError, TypeError):
        code, message, details = "http_error", reply.text[:500], None
    return ServiceError(reply.status_code, code, message, details)


def _outcomes(reply: httpx.Response) -> list[Outcome]:
    if reply.status_code != 200:
        raise refusal(reply)
    return [
        Outcome(Verdict(r["verdict"]), Stage(r["stage"]), float(r["seconds"]), r["message"])
        for r in reply.json()["results"]
    ]
