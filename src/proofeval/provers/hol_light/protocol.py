"""What passes between proofeval and its OCaml processes: the framed request/response
protocol over a socket, the one decoding of their bytes, and the phrases of a source file
as HOL Light's parser sees them."""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass

from proofeval.errors import CheckerError

TOO_OLD = "this HOL Light may be too old for these sources: pass --hol-light DIR with a newer one"


def encode(fields: list[str]) -> bytes:
    out = [f"{len(fields)}\n".encode()]
    for f in fields:
        data = f.encode()
        out.append(f"{len(data)}\n".encode() + data)
    return b"".join(out)


def decode_text(data: bytes) -> str:
    """The one decoding of bytes from a prover process: UTF-8, each invalid byte shown as
    `\\xNN`. It never raises and never yields a lone surrogate (so the text can be stored,
    written and printed), and unlike U+FFFD it keeps which bytes they were: an answer's
    `failwith "\\255"`, a message cut inside a character by the prover's byte limit."""
    return data.decode("utf-8", errors="backslashreplace")


# Framing limits: a count or length line is a decimal number without sign or leading
# zeros; anything longer, or larger than these, is a broken or hostile process.
MAX_FIELDS = 1 << 24
MAX_FIELD_BYTES = 1 << 28
NUMBER = re.compile(rb"0|[1-9][0-9]{0,11}")
MAX_NUMBER_LINE = 13


class Connection:
    """Framed request/response over one socket to one warm process.

    Whatever the process sends, `receive` returns a list of str or raises CheckerError."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self._buf = b""

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CheckerError("the HOL Light process did not answer in time")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError as exc:
            raise CheckerError("the HOL Light process did not answer in time") from exc
        except OSError as exc:
            raise CheckerError(f"lost the HOL Light process: {exc}") from exc
        if not chunk:
            raise CheckerError("the HOL Light process died")
        self._buf += chunk

    def _number(self, limit: int, deadline: float) -> int:
        while b"\n" not in self._buf[:MAX_NUMBER_LINE]:
            if len(self._buf) >= MAX_NUMBER_LINE:
                raise CheckerError(f"malformed reply from HOL Light: {self._buf[:20]!r}...")
            self._fill(deadline)
        line, self._buf = self._buf.split(b"\n", 1)
        if not NUMBER.fullmatch(line) or int(line) > limit:
            raise CheckerError(f"malformed reply from HOL Light: bad number {line!r}")
        return int(line)

    def _bytes(self, n: int, deadline: float) -> bytes:
        while len(self._buf) < n:
            self._fill(deadline)
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def receive(self, timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        count = self._number(MAX_FIELDS, deadline)
        fields = [
            self._bytes(self._number(MAX_FIELD_BYTES, deadline), deadline) for _ in range(count)
        ]
        if self._buf:  # one request, one reply: more means the stream is out of step
            raise CheckerError(f"malformed reply from HOL Light: trailing {self._buf[:20]!r}")
        return [decode_text(f) for f in fields]

    def request(self, fields: list[str], timeout: float) -> list[str]:
        try:
            self.sock.sendall(encode(fields))
        except OSError as exc:
            raise CheckerError(f"lost the HOL Light process: {exc}") from exc
        return self.receive(timeout)

    def close(self) -> None:
        self.sock.close()


@dataclass(frozen=True)
class Phrase:
    """A top-level phrase of a source file, as HOL Light's parser sees it.

    Offsets are byte offsets into the file; `start` is where the phrase's code begins
    (after comments and blank lines), `end` is just past its terminating `;;`.
    kind: "prove" (`let name = prove(goal, tactic)`, also `time prove`), "load"
    (`needs`/`loadt`/`loads` of the file `arg`), "directive", or "other".
    """

    start: int
    end: int
    kind: str
    name: str
    arg: str
    goal: tuple[int, int] | None
    tactic: tuple[int, int] | None
