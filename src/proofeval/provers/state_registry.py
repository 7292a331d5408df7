"""Each prover's proof states, by the problem's `prover` (see states.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import ProblemStates


@dataclass
class StateOpener:
    """Opens one problem's states for one session (`open`); `close` ends what the
    prover shares between sessions (HOL Light's loaded contexts)."""

    open: Callable[[Problem], ProblemStates]
    close: Callable[[], None]


def _hol_light(settings: CheckSettings, warm: object) -> StateOpener:
    from proofeval.provers.hol_light.states import HolLightStateFactory

    if warm is None:
        raise InputError("HOL Light's proof states need its started core")
    factory = HolLightStateFactory(warm)  # type: ignore[arg-type]
    return StateOpener(factory.open, factory.close)


def _coq(settings: CheckSettings, warm: object) -> StateOpener:
    from proofeval.provers.coq.states import CoqStates

    return StateOpener(lambda problem: CoqStates(problem, settings), lambda: None)


OPENERS: dict[str, Callable[[CheckSettings, object], StateOpener]] = {
    "hol-light": _hol_light,
    "coq": _coq,
}


def state_opener(prover: str, settings: CheckSettings, warm: object = None) -> StateOpener:
    """`prover`'s proof states; InputError for a prover without them. `warm`: the
    prover's shared process (registry.start_warm), where it has one."""
    if prover not in OPENERS:
        raise InputError(
            f"no proof states for prover {prover!r} (proofeval has them for: "
            f"{', '.join(sorted(OPENERS))})"
        )
    return OPENERS[prover](settings, warm)
