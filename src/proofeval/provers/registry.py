"""Provers by name: the one mapping of names (and aliases) to backends (backend.py), and
what is asked of provers in general through it. Adding a prover is adding its package
(provers/<name>/backend.py) and one entry to BACKENDS."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.backend import Backend, Shared, SharedProcess, StateOpener, System
from proofeval.provers.coq import backend as coq
from proofeval.provers.hol_light import backend as hol_light
from proofeval.provers.interface import (
    Checker,
    CheckSettings,
    EventCallback,
    ResultCallback,
)
from proofeval.provers.isabelle import backend as isabelle
from proofeval.provers.lean4 import backend as lean4

# Every prover proofeval knows, by name; an entry added here is a prover everywhere.
BACKENDS: dict[str, Backend] = {
    b.name: b for b in (hol_light.BACKEND, coq.BACKEND, lean4.BACKEND, isabelle.BACKEND)
}


def find(name: str) -> Backend | None:
    """The backend of the prover `name` or one of its aliases names; None if unknown."""
    if name in BACKENDS:
        return BACKENDS[name]
    return next((b for b in BACKENDS.values() if name in b.aliases), None)


def canonical(name: str) -> str:
    """The prover's own name for `name` (an alias: "rocq" is "coq"); unknown names as given."""
    found = find(name)
    return name if found is None else found.name


def backend(name: str) -> Backend:
    """The backend of the prover `name` (or an alias); InputError with a suggestion if unknown."""
    found = find(name)
    if found is None:
        raise InputError(prover_error(name) or name)
    return found


def supported() -> frozenset[str]:
    """The provers proofeval checks."""
    return frozenset(name for name, b in BACKENDS.items() if b.checker is not None)


def known() -> frozenset[str]:
    return frozenset(BACKENDS)


def prover_error(name: str) -> str | None:
    """None when `name` is a prover proofeval knows; else why not, with the name the user
    probably meant: "unknown prover 'hol_light': did you mean hol-light?"."""
    if find(name) is not None:
        return None
    return f"unknown prover {name!r}{_suggestion(name)} (provers: {', '.join(sorted(known()))})"


def check_error(name: str) -> str | None:
    """None when proofeval can check problems of prover `name`; else why not."""
    found = find(name)
    if found is None:
        return prover_error(name)
    if found.checker is not None:
        return None
    return (
        f"no checker for prover {name!r}: {found.unchecked} "
        f"(proofeval checks: {', '.join(sorted(supported()))})"
    )


def refuse_unchecked(problems: Iterable[Problem]) -> None:
    """InputError naming the first prover of `problems` proofeval cannot check: a run of
    attempts that can never get a verdict is no run (a misspelt name gets its suggestion)."""
    for prover in sorted({p.prover for p in problems}):
        error = check_error(prover)
        if error is not None:
            raise InputError(error)


def client_header(prover: str, header: str, settings: CheckSettings) -> str:
    """A header a service's client sent for `prover`, as its context will load it;
    InputError when the prover's rule refuses it. Unknown provers' headers as sent (their
    items are ERRORs of the checker)."""
    found = find(prover)
    return header if found is None else found.client_header(header, settings)


def _suggestion(name: str) -> str:
    folded = name.strip().lower().replace("_", "-").replace(" ", "-")
    spellings = {s: b.name for b in BACKENDS.values() for s in (b.name, *b.aliases)}
    squeezed = {s.replace("-", ""): n for s, n in spellings.items()}
    guess = spellings.get(folded) or squeezed.get(folded.replace("-", ""))
    if guess is None:
        close = difflib.get_close_matches(folded, sorted(known()), n=1, cutoff=0.6)
        guess = close[0] if close else None
    return f": did you mean {guess}?" if guess else ""


def make_checker(
    prover: str,
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback = lambda _msg: None,
    shared: SharedProcess | None = None,
) -> Checker:
    """A checker of `prover` (which must be supported); `shared`: its started shared process."""
    factory = backend(prover).checker
    if factory is None:
        raise InputError(check_error(prover) or prover)
    return factory(settings, on_result, on_event, shared)


def has_shared(prover: str) -> bool:
    """Whether `prover`'s checkers share a process that is started once (HOL Light's core)."""
    found = find(prover)
    return found is not None and found.shared is not None


def start_shared(
    prover: str,
    settings: CheckSettings,
    read_only: Iterable[Path] = (),
    on_event: EventCallback = lambda _msg: None,
) -> Shared | None:
    """Start `prover`'s shared process (minutes for HOL Light); None if it has none.
    `read_only`: directories its contexts may load files from; `on_event`: its progress."""
    starter = backend(prover).shared
    return None if starter is None else starter(settings, read_only, on_event)


def state_opener(
    prover: str, settings: CheckSettings, shared: SharedProcess | None = None
) -> StateOpener:
    """`prover`'s proof states; InputError for a prover without them. `shared`: the
    prover's started shared process, where it has one."""
    found = backend(prover)
    if found.states is None:
        have = sorted(name for name, b in BACKENDS.items() if b.states is not None)
        raise InputError(
            f"no proof states for prover {prover!r} (proofeval has them for: {', '.join(have)})"
        )
    return found.states(settings, shared)


def _by_prover(problems: Iterable[Problem]) -> list[tuple[Backend, list[Problem]]]:
    """The known provers of `problems` in name order, each with its problems."""
    grouped: dict[str, list[Problem]] = {}
    for problem in problems:
        if find(problem.prover) is not None:
            grouped.setdefault(canonical(problem.prover), []).append(problem)
    return [(BACKENDS[name], grouped[name]) for name in sorted(grouped)]


def systems(problems: Iterable[Problem], settings: CheckSettings) -> list[System]:
    """The exact provers that check `problems` under `settings`, for results and reports
    to record, one per build ("Coq 8.20.1 (debian13)")."""
    return [
        system for found, group in _by_prover(problems) for system in found.systems(group, settings)
    ]


def benchmark_warnings(problems: Iterable[Problem]) -> list[str]:
    """What a benchmark's own headers set up that answers could exploit through a prover's
    known soundness bugs, one line per risk."""
    return [line for found, group in _by_prover(problems) for line in found.warnings(group)]
