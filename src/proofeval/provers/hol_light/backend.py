"""HOL Light as proofeval sees it: the one object the registry holds (see
provers/backend.py). Its modules are imported only when a field is called."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from proofeval.errors import InputError
from proofeval.provers.backend import Backend, Shared, SharedProcess, StateOpener
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


def _shared(settings: CheckSettings, read_only: Iterable[Path]) -> Shared:
    from proofeval.provers.hol_light.server import launcher

    started = launcher(settings, read_only)
    return Shared(started.start(), started.close)


def _states(settings: CheckSettings, shared: SharedProcess | None) -> StateOpener:
    from proofeval.provers.hol_light.states import HolLightStateFactory

    base = core(shared)
    if base is None:
        raise InputError("HOL Light's proof states need its started core")
    factory = HolLightStateFactory(base)
    return StateOpener(factory.open, factory.close)


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
    home=Path("/usr/share/hol-light"),
)
