"""The service's connections: each request under a deadline, their number bounded.

uvicorn waits for a request's headers and body as long as the client likes, and keeps as
many connections as it is sent: a client that sends a byte now and then holds a
connection, its memory and a descriptor for ever (1,100 unfinished bodies stayed open,
issue 27). Here, while a connection waits on its client, it is under a deadline: the
request's headers within `header_timeout` seconds of the connection (or of the previous
response), then its body within `body_timeout` seconds of the headers. A connection that
misses one gets 408 (when anything of a request came and no response began) and is closed.

At most `max_connections` are open. One more closes the connection that has waited
longest on its client (a slow request, or an idle keep-alive), so slow clients cannot
crowd out quick ones; when every connection is busy with a request being answered, the
new one gets 503 with Retry-After and is closed.

This subclasses uvicorn's h11 protocol (tests/test_serve_connections.py holds it to
these rules); h11's `their_state` says what the connection waits for.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from proofeval.scale.service.errors import error_bytes

# why the guard closed a connection, with what a client that began a request is told
WHY = {
    "header_timeout": "the request's headers did not arrive in time",
    "body_timeout": "the request's body did not arrive in time",
    "evicted": "too many connections: this one waited longest on its request",
    "refused": "every connection is busy: retry later",
}


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    max_connections: int = 512


class ConnectionGuard:
    """The open connections of one server, and why the guard closed the others."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: set[GuardedProtocol] = set()
        self.closed = dict.fromkeys(WHY, 0)

    def protocol(self) -> type[H11Protocol]:
        """The protocol class to give uvicorn (Config(http=...)), bound to this guard."""
        guard = self

        class Bound(GuardedProtocol):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, guard=guard, **kwargs)

        return Bound

    def admit(self, new: GuardedProtocol) -> bool:
        """Whether `new` may stay open, after closing the longest waiter when full."""
        if len(self.open) >= self.limits.max_connections:
            waiting = [p for p in self.open if p.waiting is not None]
            if not waiting:
                self.closed["refused"] += 1
                return False
            min(waiting, key=lambda p: p.since).expire("evicted")
        self.open.add(new)
        return True


def _closing_response(status: bytes, reason: str, headers: bytes = b"") -> bytes:
    """A whole response written below h11 (the connection closes right after it), its
    body the service's one error shape (errors.py) with `reason` as its code."""
    body = error_bytes(reason, WHY[reason])
    return (
        b"HTTP/1.1 %s\r\ncontent-type: application/json\r\nconnection: close\r\n%s"
        b"content-length: %d\r\n\r\n%s" % (status, headers, len(body), body)
    )


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol, with the guard's deadlines and bound."""

    def __init__(self, *args: Any, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard
        self.waiting: str | None = None  # "headers" or "body": what the client owes
        self.since = 0.0
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(self):
            transport.write(
                _closing_response(b"503 Service Unavailable", "refused", b"retry-after: 1\r\n")
            )
            transport.close()
            return
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.open.discard(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Set the deadline for what the connection now waits for from its client."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        waiting = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if waiting == self.waiting:
            return
        self._disarm()
        self.waiting, self.since = waiting, self.loop.time()
        limits = self.guard.limits
        if waiting == "headers":
            self._deadline = self.loop.call_later(
                limits.header_timeout, self.expire, "header_timeout"
            )
        elif waiting == "body":
            self._deadline = self.loop.call_later(limits.body_timeout, self.expire, "body_timeout")

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.waiting = None

    def expire(self, reason: str) -> None:
        """Close this connection for `reason` (a key of ConnectionGuard.closed)."""
        if self.transport.is_closing():
            return
        self.guard.closed[reason] += 1
        if self._owes_an_answer():
            self.transport.write(_closing_response(b"408 Request Timeout", reason))
        self._disarm()
        self.guard.open.discard(self)
        self.transport.close()

    def _owes_an_answer(self) -> bool:
        """Whether the client began a request that no response has begun to answer (an
        idle keep-alive is closed without one: a client may be sending on it already)."""
        if self.waiting == "body":
            return not self.cycle.response_started
        return bool(self.conn.trailing_data[0])
