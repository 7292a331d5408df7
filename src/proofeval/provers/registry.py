"""Provers by name, and checking a stream of jobs that may mix them.

Each prover's checker runs in a thread of its own, so a run that mixes provers checks
them in parallel; jobs are routed by their problem's `prover` as they arrive. A prover
may also have a process that many checkers share (HOL Light's loaded core): `start_warm`."""

from __future__ import annotations

import difflib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.interface import (
    Checker,
    CheckerFactory,
    CheckSettings,
    EventCallback,
    Job,
    ResultCallback,
)


def _hol_light(
    settings: CheckSettings, on_result: ResultCallback, on_event: EventCallback, warm: object
) -> Checker:
    from proofeval.provers.hol_light.pool import HolLightChecker

    return HolLightChecker(settings, on_result, on_event, base=warm)  # type: ignore[arg-type]


def _coq(
    settings: CheckSettings, on_result: ResultCallback, on_event: EventCallback, warm: object
) -> Checker:
    from proofeval.provers.coq import CoqChecker

    return CoqChecker(settings, on_result, on_event)


FACTORIES: dict[str, CheckerFactory] = {"hol-light": _hol_light, "coq": _coq}


def benchmark_warnings(problems: Iterable[Problem]) -> list[str]:
    """What a benchmark's own headers set up that answers could exploit through a prover's
    known soundness bugs (so far Coq's), one line per risk."""
    from proofeval.provers.coq.risks import benchmark_warnings as coq_warnings

    return coq_warnings(problems)


def prover_versions(problems: Iterable[Problem], settings: CheckSettings) -> list[str]:
    """The exact provers that check `problems` under `settings`, for results and reports
    to record; so far Coq's, one line per toolchain ("Coq 8.20.1 (debian13)")."""
    from proofeval.provers.coq.toolchain import resolve

    described = []
    for name in _coq_toolchain_names(problems, settings):
        try:
            described.append(resolve(name).describe())
        except InputError as exc:  # each attempt of its problems says so as its ERROR
            described.append(f"Coq toolchain {name!r}: {exc}")
    return described


def coq_systems(problems: Iterable[Problem], settings: CheckSettings) -> list[tuple[str, Path]]:
    """(description, root) of each installed Coq toolchain that checks `problems`: the
    system whose /usr its checker sees, where the programs a tactic calls are looked for.
    One not installed is left out (each attempt of its problems said so as its ERROR)."""
    from proofeval.provers.coq.toolchain import resolve

    systems = []
    for name in _coq_toolchain_names(problems, settings):
        try:
            chain = resolve(name)
        except InputError:
            continue
        systems.append((chain.describe(), chain.root))
    return systems


def _coq_toolchain_names(problems: Iterable[Problem], settings: CheckSettings) -> list[str]:
    """--coq, else each Coq problem's own toolchain or its tree's (detect.py)."""
    from proofeval.provers.coq.detect import toolchain_for

    return sorted(
        {
            toolchain_for(settings.coq_toolchain, p.coq_toolchain, p.directory)[0]
            for p in problems
            if p.prover == "coq"
        }
    )


@dataclass(frozen=True)
class Warm:
    """A prover's ready process that checkers share (given to them as `warm`), and how to
    stop it. It dies with the thread that started it (bwrap): start it in one that lives
    as long as its users."""

    process: object
    close: Callable[[], None]


def _hol_light_warm(settings: CheckSettings, read_only: Iterable[Path]) -> Warm:
    from proofeval.provers.hol_light.server import launcher

    started = launcher(settings, read_only)
    return Warm(started.start(), started.close)


# Provers whose checkers share a process; the others start what they need themselves.
WARM_STARTERS: dict[str, Callable[[CheckSettings, Iterable[Path]], Warm]] = {
    "hol-light": _hol_light_warm
}


def supported() -> frozenset[str]:
    return frozenset(FACTORIES)


# Provers a benchmark may name that proofeval has no checker for yet: their problems load
# (to list, export or prompt for), but checking them is refused with its reason.
KNOWN_UNCHECKED = frozenset({"lean4", "isabelle"})

# Spellings users write for a prover's name.
ALIASES = {"rocq": "coq", "hol": "hol-light", "hollight": "hol-light", "lean": "lean4"}


def known() -> frozenset[str]:
    return supported() | KNOWN_UNCHECKED


def prover_error(name: str) -> str | None:
    """None when `name` is a prover proofeval knows; else why not, with the name the user
    probably meant: "unknown prover 'hol_light': did you mean hol-light?"."""
    if name in known():
        return None
    return f"unknown prover {name!r}{_suggestion(name)} (provers: {', '.join(sorted(known()))})"


def check_error(name: str) -> str | None:
    """None when proofeval can check problems of prover `name`; else why not."""
    if name in supported():
        return None
    return prover_error(name) or (
        f"no checker for prover {name!r} (proofeval checks: {', '.join(sorted(supported()))})"
    )


def _suggestion(name: str) -> str:
    folded = name.strip().lower().replace("_", "-").replace(" ", "-")
    folded = ALIASES.get(folded.replace("-", ""), folded)
    if folded in known():
        return f": did you mean {folded}?"
    close = difflib.get_close_matches(folded, sorted(known()), n=1, cutoff=0.6)
    return f": did you mean {close[0]}?" if close else ""


def make_checker(
    prover: str,
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback = lambda _msg: None,
    warm: object = None,
) -> Checker:
    """A checker of `prover` (which must be supported)."""
    return FACTORIES[prover](settings, on_result, on_event, warm)


def start_warm(prover: str, settings: CheckSettings, read_only: Iterable[Path] = ()) -> Warm | None:
    """Start `prover`'s shared process (minutes for HOL Light); None if it has none.
    `read_only`: directories its contexts may load files from."""
    starter = WARM_STARTERS.get(prover)
    return None if starter is None else starter(settings, read_only)


def check_all(
    jobs: Iterable[Job],
    problems: Iterable[Problem],
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback = lambda _msg: None,
    warm: Mapping[str, object] | None = None,
) -> None:
    """Check every job with its problem's prover (each must be supported); jobs may be
    produced while checking goes on. `warm`: a prover's ready process to reuse (tests)."""
    by_prover: dict[str, list[Problem]] = {}
    for problem in problems:
        by_prover.setdefault(problem.prover, []).append(problem)
    unknown = sorted(set(by_prover) - supported())
    if unknown:
        raise InputError(check_error(unknown[0]) or "")
    lanes = {
        prover: _Lane(make_checker(prover, settings, on_result, on_event, (warm or {}).get(prover)))
        for prover in by_prover
    }
    for prover, lane in lanes.items():
        lane.start(by_prover[prover])
    try:
        for job in jobs:
            lane = lanes[job.problem.prover]
            if lane.failure is not None:
                break
            lane.put(job)
    finally:
        for lane in lanes.values():
            lane.finish()
    failures = [lane.failure for lane in lanes.values() if lane.failure is not None]
    if failures:
        raise failures[0]


_DONE = object()


class _Lane:
    """One prover's checker, fed from a queue in a thread that outlives its processes
    (a sandbox may die with the thread that started it)."""

    def __init__(self, checker: Checker) -> None:
        self.checker = checker
        self.queue: queue.Queue[object] = queue.Queue()
        self.failure: BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self, problems: list[Problem]) -> None:
        self.thread = threading.Thread(target=self._run, args=(problems,), daemon=True)
        self.thread.start()

    def _run(self, problems: list[Problem]) -> None:
        try:
            self.checker.run(self._jobs(), problems)
        except BaseException as exc:  # raised by check_all once every lane has stopped
            self.failure = exc

    def _jobs(self) -> Iterator[Job]:
        while (job := self.queue.get()) is not _DONE:
            yield job  # type: ignore[misc]

    def put(self, job: Job) -> None:
        self.queue.put(job)

    def finish(self) -> None:
        self.queue.put(_DONE)
        if self.thread is not None:
            self.thread.join()
