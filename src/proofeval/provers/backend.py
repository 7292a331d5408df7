"""What proofeval knows about one prover, in one place: a `Backend`.

Each prover's package defines one (`provers/<name>/backend.py`, module-level BACKEND) and
the registry (registry.py) maps names to them; nothing outside a prover's package reaches
its modules except through these fields. A backend's fields are plain values and
functions that import the prover's heavy modules only when called, so reading the
registry costs nothing.

A prover proofeval knows but cannot check (Lean 4, Isabelle: no toolchain here) is a
backend without `checker`: its problems load, list and get prompts; checking them is
refused with `unchecked`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from proofeval.model import Problem
from proofeval.provers.interface import (
    Checker,
    CheckSettings,
    EventCallback,
    ResultCallback,
)
from proofeval.provers.states import ProblemStates, Step


class SharedProcess(Protocol):
    """A prover's loaded process that its checkers and proof states fork instead of
    loading the prover again (HOL Light's core). Only its own backend looks inside."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class Shared:
    """A started shared process and how to stop it. It dies with the thread that started
    it (bwrap): start it in one that lives as long as its users."""

    process: SharedProcess
    close: Callable[[], None]


@dataclass(frozen=True)
class StateOpener:
    """Opens one problem's states for one session (`open`); `close` ends what the
    prover shares between sessions (HOL Light's loaded contexts)."""

    open: Callable[[Problem], ProblemStates]
    close: Callable[[], None]


@dataclass(frozen=True)
class System:
    """One exact prover a check runs on: what results record ("Coq 8.20.1 (debian13)")
    and, where it is a root of its own, the root whose /usr its tools are looked in."""

    description: str
    root: Path | None = None


class Toolchains(Protocol):
    """Other builds of a prover that problems may choose (Coq's Debian roots)."""

    def buildable(self) -> list[str]: ...

    def installed(self) -> list[str]: ...

    def add(self, name: str, force: bool, say: Callable[[str], None]) -> None: ...

    def validated(self, name: str) -> str:
        """`name` as problems give it, once known to be buildable or built (InputError)."""
        ...

    def describe(self, name: str) -> System: ...


@dataclass(frozen=True)
class Baseline:
    """One baseline method of a prover: the tactics it tries on every problem, in order;
    what must be loaded before each problem's header for them (`tools`, which an answer
    may not load itself); each tactic's default wall-clock budget; and, for a method with
    limits of its own, the header line that raises them to a per-problem budget."""

    tactics: tuple[str, ...]
    tools: str = ""
    timeout: float = 10.0
    limit_line: Callable[[float], str] | None = None


CheckerFactory = Callable[
    [CheckSettings, ResultCallback, EventCallback, "SharedProcess | None"], Checker
]
SharedStarter = Callable[[CheckSettings, Iterable[Path], EventCallback], Shared]
StatesFactory = Callable[[CheckSettings, "SharedProcess | None"], StateOpener]


def _as_is(proof: str, _statement: str) -> str:
    return proof


def _one_step(proof: str) -> list[str]:
    return [proof]


def _joined(steps: Sequence[Step]) -> str:
    return "\n".join(step.tactic.strip() for step in steps)


def _none(_problems: Sequence[Problem], _settings: CheckSettings) -> list[System]:
    return []


def _no_warnings(_problems: Iterable[Problem]) -> list[str]:
    return []


def _as_sent(header: str, _settings: CheckSettings) -> str:
    return header


def _no_notes(_method: str, _problems: Sequence[Problem], _settings: CheckSettings) -> list[str]:
    return []


@dataclass(frozen=True)
class Backend:
    """Everything proofeval knows about one prover.

    name: the name problems give ("hol-light"); aliases: other spellings users write,
    honoured everywhere a prover is named. title: for people and prompts ("HOL Light");
    fence: the code-fence tag of its answers; template: the built-in prompt template.
    checker / unchecked: how its attempts are checked, else why they cannot be.
    shared: starts the process its checkers share (None: each checker starts its own).
    states: its proof states (None: it has none). answer: the proof to check in a
    model's fenced answer, given the problem's statement (a restated theorem dropped).
    assemble / steps: a path of proof-state steps as one answer, and an answer as steps.
    probe: an answer that elaborates any statement and proves nothing (validation).
    systems: the exact builds that check given problems. warnings: risks a benchmark's own
    headers open. toolchains: other builds problems may choose. home: where the prover is
    installed when settings name no other place (HOL Light's sources). baselines: its
    baseline methods by name; tactic: how an answer states one tactic ("{}" is the
    tactic); no_baseline: why a method it lacks is missing; baseline_notes: what a
    method's run should say about the systems its problems run on (the ATPs CoqHammer finds).
    client_header: a header a service's client sent, as the context will load it
    (InputError when it is refused: a header is code the prover runs)."""

    name: str
    title: str
    fence: str
    aliases: tuple[str, ...] = ()
    template: str = "formal_proof"
    checker: CheckerFactory | None = None
    unchecked: str = ""
    shared: SharedStarter | None = None
    states: StatesFactory | None = None
    answer: Callable[[str, str], str] = _as_is
    assemble: Callable[[Sequence[Step]], str] = _joined
    steps: Callable[[str], list[str]] = _one_step
    probe: str | None = None
    systems: Callable[[Sequence[Problem], CheckSettings], list[System]] = _none
    warnings: Callable[[Iterable[Problem]], list[str]] = _no_warnings
    toolchains: Toolchains | None = None
    home: Path | None = None
    baselines: Mapping[str, Baseline] = field(default_factory=dict)
    tactic: str = "{}"
    no_baseline: Mapping[str, str] = field(default_factory=dict)
    baseline_notes: Callable[[str, Sequence[Problem], CheckSettings], list[str]] = _no_notes
    client_header: Callable[[str, CheckSettings], str] = _as_sent
