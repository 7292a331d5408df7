"""Warm at once: `proofeval mcp` and `proofeval serve` start the provers and the
benchmark's contexts as they start, in a thread, saying how far they got (on stderr, in
/health); a call about a problem waits for its context (the MCP tools report progress
while they wait) instead of loading it on its own in silence.

A context is warmed the way a call would use it: its prover's shared process (HOL Light's
core) is started, then a proof state of one of its problems is started in `session`
(HOL Light: the context is loaded in the shared process and forked; Coq: a coqtop with
the header loaded) and released. The prover processes die with the thread that started
them (bwrap --die-with-parent), so the warm-up's thread lives until `close`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from proofeval.checking.engine import context_key
from proofeval.model import Problem
from proofeval.states import StateSession


@dataclass
class Progress:
    """What one prover or context is at: starting, loading, ready or failed (why)."""

    status: str = "starting"
    seconds: float = 0.0
    reason: str = ""
    done: threading.Event = field(default_factory=threading.Event)

    def as_json(self) -> dict:
        shown: dict = {"status": self.status, "seconds": round(self.seconds, 3)}
        return shown | ({"reason": self.reason} if self.reason else {})


MAX_CONTEXTS = 8  # contexts warmed at start at most (the others load when first used)


class Warmup:
    """The provers and contexts of `problems`, warmed in order by `start()`; `provers`:
    more provers to start (the service's inline problems)."""

    def __init__(
        self,
        warm_up: Callable[[list[str]], dict[str, str]],
        session: Callable[[], StateSession] | None,
        problems: Iterable[Problem],
        provers: Iterable[str] = (),
        say: Callable[[str], None] = lambda _message: None,
        *,
        close_sessions: bool = False,
    ) -> None:
        """`warm_up(provers)`: Checker.warm_up; `session()`: the session to start states
        in (None: provers only), closed after each context when `close_sessions` (what a
        prover shares between sessions, HOL Light's loaded contexts, stays)."""
        self._warm_up, self._session, self._say = warm_up, session, say
        self._close = close_sessions
        self._first: dict[str, Problem] = {}
        for p in problems:
            if len(self._first) < MAX_CONTEXTS:
                self._first.setdefault(context_key(p), p)
        wanted = set(provers) | {p.prover for p in self._first.values()}
        self.provers = {name: Progress() for name in sorted(wanted)}
        self.contexts = {key: Progress() for key in self._first} if session else {}
        self.started = time.monotonic()
        self._closed = threading.Event()

    def start(self) -> Warmup:
        threading.Thread(target=self._live, name="proofeval-warmup", daemon=True).start()
        return self

    def close(self) -> None:
        """End the warm-up's thread (and so the processes it started: call it last)."""
        self._closed.set()

    def _live(self) -> None:
        self.run()
        self._closed.wait()

    def run(self) -> None:
        for name, progress in self.provers.items():
            self._step(progress, f"{name}: starting", lambda n=name: self._prover(n))
        for key, progress in self.contexts.items():
            p = self._first[key]
            failed = self.provers[p.prover].reason
            if failed:
                self._end(progress, "failed", f"{p.prover} did not start: {failed}")
                continue
            self._step(progress, f"the context of {p.id}: loading", lambda p=p: self._context(p))
        self._say(f"ready in {time.monotonic() - self.started:.1f} s" if self.ready() else
                  "warm-up finished with failures (see /health or the tools' errors)")  # fmt: skip

    def _prover(self, name: str) -> None:
        failure = self._warm_up([name]).get(name)
        if failure:
            raise RuntimeError(failure)

    def _context(self, p: Problem) -> None:
        assert self._session is not None
        session = self._session()
        try:
            session.release(session.start(p).id)
        finally:
            if self._close:
                session.close()

    def _step(self, progress: Progress, saying: str, work: Callable[[], None]) -> None:
        self._say(saying)
        progress.status, began = "loading", time.monotonic()
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - a failure is the item's status, not the end
            self._end(progress, "failed", str(exc) or type(exc).__name__, began)
            self._say(f"{saying.rsplit(':', 1)[0]}: failed: {progress.reason}")
            return
        self._end(progress, "ready", "", began)
        self._say(f"{saying.rsplit(':', 1)[0]}: ready in {progress.seconds:.1f} s")

    @staticmethod
    def _end(progress: Progress, status: str, reason: str, began: float | None = None) -> None:
        progress.seconds = time.monotonic() - began if began is not None else 0.0
        progress.status, progress.reason = status, reason
        progress.done.set()

    # --- what the surfaces ask ----------------------------------------------------------

    def ready(self) -> bool:
        every = [*self.provers.values(), *self.contexts.values()]
        return all(p.status == "ready" for p in every)

    def finished(self) -> bool:
        return all(p.done.is_set() for p in [*self.provers.values(), *self.contexts.values()])

    def of(self, problem: Problem) -> Progress | None:
        """What `problem`'s context waits on: itself, else its prover; None if neither is
        warmed here."""
        return self.contexts.get(context_key(problem)) or self.provers.get(problem.prover)

    def as_json(self) -> dict:
        contexts = {
            key: {"problem": self._first[key].id, "prover": self._first[key].prover}
            | progress.as_json()
            for key, progress in self.contexts.items()
        }
        provers = {name: progress.as_json() for name, progress in self.provers.items()}
        return {"provers": provers, "contexts": contexts}
