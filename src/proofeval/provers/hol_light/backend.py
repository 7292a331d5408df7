"""HOL Light as proofeval sees it: the one object the registry holds (see
provers/backend.py). Its modules are imported only when a field is called."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.backend import (
    Backend,
    Baseline,
    Shared,
    SharedProcess,
    StateOpener,
    System,
)
from proofeval.provers.interface import Checker, CheckSettings, EventCallback, ResultCallback
from proofeval.provers.states import Step

if TYPE_CHECKING:
    from proofeval.provers.hol_light.server import WarmProcess


def core(shared: SharedProcess | None) -> WarmProcess | None:
    """HOL Light's shared process as what it is: the loaded core's WarmProcess."""
    from proofeval.provers.hol_light.server import WarmProcess

    if shared is not None and not isinstance(shared, WarmProcess):
        raise TypeError(f"HOL Light's shared process is a WarmProcess, not {type(shared)}")
    return shared


def _checker(
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback,
    shared: SharedProcess | None,
) -> Checker:
    from proofeval.provers.hol_light.pool import HolLightChecker

    return HolLightChecker(settings, on_result, on_event, base=core(shared))


def _shared(settings: CheckSettings, read_only: Iterable[Path], on_event: EventCallback) -> Shared:
    from proofeval.provers.hol_light.server import launcher

    started = launcher(settings, read_only, on_event)
    core = started.start()
    on_event("HOL Light core loaded")
    return Shared(core, started.close)


def _states(settings: CheckSettings, shared: SharedProcess | None) -> StateOpener:
    from proofeval.provers.hol_light.states import HolLightStateFactory

    base = core(shared)
    if base is None:
        raise InputError("HOL Light's proof states need its started core")
    factory = HolLightStateFactory(base, settings.memory_mb)
    return StateOpener(factory.open, factory.close)


DEBIAN = Path("/usr/share/hol-light")


def _systems(_problems: Sequence[Problem], settings: CheckSettings) -> list[System]:
    """The HOL Light sources every HOL Light problem is checked with, and the OCaml."""
    return [System(_described(settings.hol_dir or DEBIAN))]


def _client_header(header: str, settings: CheckSettings) -> str:
    from proofeval.provers.hol_light.headers import admitted

    return admitted(header, settings.hol_dir or DEBIAN)


@functools.cache  # asked at a run's start and at its end: the answer does not change
def _described(home: Path) -> str:
    version = _output(["dpkg-query", "-W", "-f=${Version}", "hol-light"]) if home == DEBIAN else ""
    ocaml = _output(["ocamlc", "-version"]) or "unknown"
    named = f"HOL Light {version} (Debian)" if version else f"HOL Light at {home}"
    return f"{named}, OCaml {ocaml}"


def _output(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def assemble(steps: Sequence[Step]) -> str:
    """One tactic expression. Each step worked on the first goal left, as HOL Light's `e`
    does, so the path is the tree of goals in preorder: a step that made one goal is
    followed by THEN, several by THENL, one goal per branch; a goal the path left open
    gets ALL_TAC (and the checker says FAIL: unsolved goals)."""
    position = 0

    def tree() -> str:
        nonlocal position
        if position >= len(steps):
            return "ALL_TAC"
        step = steps[position]
        position += 1
        tactic = f"({step.tactic.strip()})"
        branches = [tree() for _ in range(max(step.made, 0))]
        if len(branches) == 1:
            return f"{tactic} THEN ({branches[0]})"
        if branches:
            return f"{tactic} THENL [{'; '.join(f'({b})' for b in branches)}]"
        return tactic

    return tree() if steps else "ALL_TAC"


TACTICS = (
    "ARITH_TAC",
    "INT_ARITH_TAC",
    "REAL_ARITH_TAC",
    "MESON_TAC[]",
    "SET_TAC[]",
    "WORD_ARITH_TAC",
    "WORD_BITWISE_TAC",
)
PORTFOLIO = Baseline((*TACTICS, *(f"REPEAT STRIP_TAC THEN {tactic}" for tactic in TACTICS)))

BACKEND = Backend(
    name="hol-light",
    title="HOL Light",
    fence="ocaml",
    aliases=("hol", "hollight"),
    template="hol_light_tactic",
    checker=_checker,
    shared=_shared,
    states=_states,
    assemble=assemble,
    probe="ALL_TAC",
    systems=_systems,
    home=DEBIAN,
    baselines={"portfolio": PORTFOLIO},
    client_header=_client_header,
    no_baseline={
        "hammer": "HOL Light has no hammer in Debian (HOL(y)Hammer is not packaged); "
        "use --method portfolio"
    },
)
