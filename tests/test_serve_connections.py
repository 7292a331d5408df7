"""Slow and surplus clients against `proofeval serve` (issue 27): loopback only, a bounded
number of raw sockets, each attack stopping itself by a deadline. The service must keep
answering /health and an honest /check (real Coq) while they trickle, and close them."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from proofeval.client import CheckClient
from proofeval.model import Verdict
from proofeval.provers.interface import CheckSettings
from proofeval.scale.service.connections import ConnectionLimits
from tests.test_api import COQ_SPIN, PROBLEMS
from tests.test_serve import TOKEN, free_port, serving

pytestmark = [pytest.mark.service, pytest.mark.coq]

COQ = {k: PROBLEMS[5][k] for k in ("prover", "statement", "header")}
HONEST = {"problem": COQ, "proof": "intros. lia."}


@dataclass
class Slow:
    """One attacking socket: it never finishes its request."""

    sock: socket.socket
    kind: str  # "headers": never ends its headers; "body": never ends its body
    opened: float
    closed: float | None = None  # when the server closed it
    received: bytes = b""
    sent: int = 0


class SlowClients:
    """`headers` + `bodies` sockets to 127.0.0.1:port, each sending one byte every
    `interval` seconds; a thread reads what the server says and notes when it closes
    each. Everything stops at `deadline` seconds (or stop()), all sockets closed."""

    def __init__(
        self, port: int, headers: int, bodies: int, interval: float = 0.5, deadline: float = 30
    ) -> None:
        self.port, self.interval = port, interval
        self.slow: list[Slow] = []
        self._stop = threading.Event()
        self._until = time.monotonic() + deadline
        for i in range(headers + bodies):
            self.slow.append(self._open("headers" if i < headers else "body"))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _open(self, kind: str) -> Slow:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        head = b"POST /check HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if kind == "body":
            head += b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            head += b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
        sock.sendall(head)
        sock.setblocking(False)
        return Slow(sock, kind, time.monotonic())

    def open(self) -> list[Slow]:
        return [s for s in self.slow if s.closed is None]

    def _run(self) -> None:
        try:
            while self.open() and not self._stop.is_set() and time.monotonic() < self._until:
                self._read(self.interval)
                for s in self.open():
                    self._trickle(s)
        finally:
            for s in self.slow:
                s.sock.close()

    def _read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0 and self.open():
            ready, _, _ = select.select([s.sock for s in self.open()], [], [], left)
            for s in self.open():
                if s.sock in ready:
                    try:
                        data = s.sock.recv(4096)
                    except ConnectionError:
                        data = b""
                    s.received += data
                    if not data:
                        s.closed = time.monotonic()

    def _trickle(self, s: Slow) -> None:
        byte = b"a" if s.kind == "headers" else b" "  # a header line, JSON space: no end
        try:
            s.sock.send(byte)
            s.sent += 1
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:  # reset, or a broken pipe: the server closed it
            s.closed = s.closed or time.monotonic()

    def join(self, seconds: float) -> None:
        self._thread.join(seconds)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def honest_check(url: str) -> float:
    """Seconds to an OK for an honest Coq attempt."""
    start = time.monotonic()
    with CheckClient(url, TOKEN, retries=0) as client:
        [outcome] = client.check([HONEST])
    assert outcome.verdict == Verdict.OK
    return time.monotonic() - start


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert match, name
    return float(match[1])


def test_slow_clients_are_closed_while_health_and_an_honest_check_are_answered(
    tmp_path: Path, scratch: Path
) -> None:
    """120 sockets that never finish a request (40 in their headers, 80 in their body)
    against a service bounded to 40 connections, headers in 4 s, a body in 8 s."""
    port = free_port()
    env = {**os.environ, "PROOFEVAL_TEST_TOKEN": TOKEN, "TMPDIR": str(scratch)}
    cmd = [sys.executable, "-m", "proofeval.cli", "serve", "--port", str(port), "--provers",
           "coq", "--workers", "1", "--token-env", "PROOFEVAL_TEST_TOKEN",
           "--header-timeout", "4", "--body-timeout", "8", "--max-connections", "40"]  # fmt: skip
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(cmd, env=env, stderr=log.open("w"), text=True)
    url = f"http://127.0.0.1:{port}"
    attack = None
    try:
        wait_ready(url, proc, log)
        honest_check(url)  # the header's context loads (seconds) before the clock
        alone = honest_check(url)
        attack = SlowClients(port, headers=40, bodies=80, deadline=40)
        time.sleep(0.5)
        start = time.monotonic()
        assert httpx.get(f"{url}/health", timeout=5).json()["status"] == "ready"
        health = time.monotonic() - start
        during = honest_check(url)
        still_open = len(attack.open())
        print(f"/health {health:.2f}s, /check {during:.2f}s ({alone:.2f}s alone), "
              f"{still_open} slow connections still open")  # fmt: skip
        # answered while slow ones were still open, not after their deadlines (4 s, 8 s)
        assert still_open >= 20 and health < 2.0 and during < alone + 2.0

        attack.join(20)  # the last deadline is 8 s after the last body began
        assert not attack.open(), f"{len(attack.open())} slow connections still open"
        for s in attack.slow:
            assert s.closed is not None and s.closed - s.opened < 8 + 2, s
            # each got 408 (its request had begun) or nothing (evicted before its first
            # byte was read); never an answer to a request it did not finish
            assert s.received == b"" or s.received.startswith(b"HTTP/1.1 408 "), s.received

        text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
        closed = {
            reason: metric(text, f'proofeval_connections_closed_total{{reason="{reason}"}}')
            for reason in ("header_timeout", "body_timeout", "evicted", "refused")
        }
        assert closed["evicted"] >= 80  # 120 opened against a bound of 40
        assert closed["header_timeout"] + closed["body_timeout"] + closed["evicted"] >= 120
        assert closed["refused"] == 0  # there was always a slow one to close instead
        assert metric(text, "proofeval_open_connections") <= 2
        assert httpx.get(f"{url}/health").status_code == 200
    finally:
        if attack is not None:
            attack.stop()
        proc.kill()
        proc.wait()
    assert "Traceback" not in log.read_text()  # the app saw the closed bodies go quietly
    # the killed service's checker scratch, left in the test's directory, not in /tmp
    assert list(scratch.glob("proofeval-coq-*")), "the service's scratch was not in TMPDIR"


def test_a_slow_header_gets_408_and_an_idle_connection_is_closed_silently() -> None:
    limits = ConnectionLimits(header_timeout=1.0, body_timeout=1.0, max_connections=8)
    with coq_service(limits) as s:
        port = int(s.url.rsplit(":", 1)[1])
        idle = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        assert read_to_end(idle) == b""  # no request begun: nothing to answer
        reply = read_to_end(partial)
        assert reply.startswith(b"HTTP/1.1 408 ") and b"headers did not arrive in time" in reply
        # the service's one error shape, below the app too
        error = json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
        assert (error["code"], error["details"]) == ("header_timeout", None)
        assert 0.8 < time.monotonic() - start < 5

        # a body that stops half way, on a route that never reads it: answered, then closed
        late = socket.create_connection(("127.0.0.1", port))
        late.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
        reply = read_to_end(late)
        assert reply.startswith(b"HTTP/1.1 ") and b"408" not in reply.split(b"\r\n")[0]
        assert 'proofeval_connections_closed_total{reason="body_timeout"} 1' in s.metrics()


def test_when_every_connection_is_being_answered_one_more_gets_503() -> None:
    spin = {"problem": COQ, "proof": COQ_SPIN}
    limits = ConnectionLimits(max_connections=2)
    with coq_service(limits) as s:
        wait_healthy(s.url)
        threads = [
            threading.Thread(target=s.post, args=({"items": [spin], "timeout": 3},))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        time.sleep(2.0)  # both requests read (one spinning 3 s, one queued behind it)
        third = socket.create_connection(("127.0.0.1", int(s.url.rsplit(":", 1)[1])))
        reply = read_to_end(third)
        assert reply.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1\r\n" in reply
        head, body = reply.split(b"\r\n\r\n", 1)
        assert b"content-type: application/json" in head
        error = json.loads(body)["error"]
        assert (error["code"], error["message"]) == (
            "refused",
            "every connection is busy: retry later",
        )
        for t in threads:
            t.join(30)
        with CheckClient(s.url, TOKEN) as client:
            assert client.check([HONEST])[0].verdict == Verdict.OK
        assert 'proofeval_connections_closed_total{reason="refused"} 1' in s.metrics()


def coq_service(limits: ConnectionLimits):
    return serving(None, settings=CheckSettings(workers=1), provers=("coq",), connections=limits)


def read_to_end(sock: socket.socket, seconds: float = 10) -> bytes:
    sock.settimeout(seconds)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return data


def wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return
        except httpx.ConnectError:
            pass
        time.sleep(0.2)
    raise AssertionError("the service did not become ready")


def wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/health").status_code != 200:
        assert time.monotonic() < deadline, "the service did not become ready"
        time.sleep(0.2)
    time.sleep(0.2)  # the probes' connections are closed and forgotten
