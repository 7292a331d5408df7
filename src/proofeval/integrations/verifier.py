"""What the integrations check with: this machine's Checker or a `proofeval serve` service,
behind one call on (problem, model output) pairs; and the process's default one."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from proofeval.checking.checker import LocalChecker
from proofeval.errors import InputError
from proofeval.generate.extract import extract
from proofeval.model import Outcome, Problem
from proofeval.scale.api import Checker
from proofeval.scale.client import CheckClient

Pair = tuple[Problem, str]  # a problem and a model's raw output (or a proof, extract=False)

SERVICE_URL = "PROOFEVAL_SERVICE_URL"  # set: the default verifier is that service
SERVICE_TOKEN = "PROOFEVAL_TOKEN"


class Verifier:
    """Checks (problem, output) pairs on a local Checker or through a service's client;
    outputs are a model's raw text unless `extract=False`."""

    def __init__(self, backend: LocalChecker | CheckClient) -> None:
        self.backend = backend

    def check(
        self, pairs: Sequence[Pair], timeout: float | None = None, extract: bool = True
    ) -> list[Outcome]:
        if isinstance(self.backend, LocalChecker):
            return self.backend.check(pairs, timeout, extract)
        return self.backend.check(_items(pairs, extract), timeout)

    async def acheck(
        self, pairs: Sequence[Pair], timeout: float | None = None, extract: bool = True
    ) -> list[Outcome]:
        if isinstance(self.backend, LocalChecker):
            return await self.backend.acheck(pairs, timeout, extract)
        return await self.backend.acheck(_items(pairs, extract), timeout)

    @property
    def local(self) -> LocalChecker | None:
        """The local Checker (proof states need one); None for a service."""
        return self.backend if isinstance(self.backend, LocalChecker) else None


def _items(pairs: Sequence[Pair], extract_proofs: bool) -> list[dict]:
    """The service's items: problems inline, proofs extracted here as the Checker would."""
    items = []
    for p, output in pairs:
        proof = extract(output, p.prover, statement=p.statement) if extract_proofs else output
        given = {"prover": p.prover, "statement": p.statement, "header": p.header}
        items.append({"problem": given | ({"timeout": p.timeout} if p.timeout else {}),
                      "proof": proof})  # fmt: skip
    return items


_lock = threading.Lock()
_default: Verifier | None = None
_started_local = False  # the default is a Checker this module started (its sandbox set)
_read_only: set[Path] = set()


def allow_directories(directories: Iterable[Path]) -> None:
    """Let the default local Checker read `directories` (problems' `directory`: HOL
    Light's sandbox is set when it starts, so before the first check)."""
    wanted = {d.resolve() for d in directories}
    with _lock:
        missing = wanted - _read_only
        if missing and _started_local:
            raise InputError(
                f"the checker started without read access to {sorted(map(str, missing))}: "
                "load every benchmark before the first check, or run one per process"
            )
        _read_only.update(missing)


def default_verifier() -> Verifier:
    """The process's verifier: the one `use` installed, else the service named by
    $PROOFEVAL_SERVICE_URL (token $PROOFEVAL_TOKEN), else a local Checker started on
    first use (HOL Light loads once per process) and closed at exit."""
    global _default, _started_local
    with _lock:
        if _default is None:
            url = os.environ.get(SERVICE_URL)
            if url:
                _default = Verifier(CheckClient(url, os.environ.get(SERVICE_TOKEN)))
            else:
                checker = Checker(read_only=sorted(_read_only))
                atexit.register(checker.close)
                _default, _started_local = Verifier(checker), True
        return _default


@contextmanager
def use(backend: LocalChecker | CheckClient) -> Iterator[Verifier]:
    """Within the block, the default verifier is `backend` (the caller closes it)."""
    global _default
    with _lock:
        before, _default = _default, Verifier(backend)
        installed = _default
    try:
        yield installed
    finally:
        with _lock:
            _default = before


def problem_fields(p: Problem) -> dict:
    """A problem as plain data, without its reference proof (never shown, never logged)."""
    return {k: v for k, v in asdict(p).items() if k != "reference"}


def problem_from(fields: dict) -> Problem:
    return Problem(**{k: v for k, v in fields.items() if k != "reference"})
