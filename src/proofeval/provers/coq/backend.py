"""Coq (Rocq) as proofeval sees it: the one object the registry holds (see
provers/backend.py). Its modules are imported only when a field is called."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from proofeval.errors import InputError
from proofeval.model import Problem
from proofeval.provers.backend import Backend, Baseline, SharedProcess, StateOpener, System
from proofeval.provers.coq import hammer
from proofeval.provers.coq.answers import answer
from proofeval.provers.interface import Checker, CheckSettings, EventCallback, ResultCallback

MAX_STEPS = 100  # a longer proof's last step is the rest of it


def _checker(
    settings: CheckSettings,
    on_result: ResultCallback,
    on_event: EventCallback,
    _shared: SharedProcess | None,
) -> Checker:
    from proofeval.provers.coq.checker import CoqChecker

    return CoqChecker(settings, on_result, on_event)


def _states(settings: CheckSettings, _shared: SharedProcess | None) -> StateOpener:
    from proofeval.provers.coq.states import CoqStates

    return StateOpener(lambda problem: CoqStates(problem, settings), lambda: None)


def steps(proof: str) -> list[str]:
    """A whole proof as proof-state steps: its sentences, one each, without Proof and the
    closing Qed or Defined (which finishing a path adds)."""
    from proofeval.provers.coq.sentences import SentenceError, split

    try:
        sentences = split(proof)
    except SentenceError:
        return [proof]  # the step's own check says why
    texts = [s.text + ("." if s.kind == "text" else "") for s in sentences]
    words = [s.code.strip() for s in sentences]
    if words[:1] == ["Proof"]:
        texts, words = texts[1:], words[1:]
    if words[-1:] and words[-1] in ("Qed", "Defined"):
        texts = texts[:-1]
    if len(texts) > MAX_STEPS:
        texts = [*texts[: MAX_STEPS - 1], " ".join(texts[MAX_STEPS - 1 :])]
    return texts


def _systems(problems: Sequence[Problem], settings: CheckSettings) -> list[System]:
    """The toolchain of every problem (--coq, else its own or its tree's: detect.py); one
    that is not installed is described by why (each of its attempts says so as its ERROR)."""
    from proofeval.provers.coq.detect import toolchain_for

    names = {
        toolchain_for(settings.coq_toolchain, p.coq_toolchain, p.directory)[0] for p in problems
    }
    systems = []
    for name in sorted(names):
        try:
            systems.append(TOOLCHAINS.describe(name))
        except InputError as exc:
            systems.append(System(f"Coq toolchain {name!r}: {exc}"))
    return systems


def _warnings(problems: Iterable[Problem]) -> list[str]:
    from proofeval.provers.coq.risks import benchmark_warnings

    return benchmark_warnings(problems)


class _Toolchains:
    """Coq toolchains: roots built from a Debian release's packages (toolchain_build.py)."""

    def buildable(self) -> list[str]:
        from proofeval.provers.coq.toolchain_build import RECIPES

        return sorted(RECIPES)

    def installed(self) -> list[str]:
        from proofeval.provers.coq.toolchain import installed

        return installed()

    def add(self, name: str, force: bool, say: Callable[[str], None]) -> None:
        from proofeval.provers.coq.toolchain_build import add

        add(name, force=force, say=say)

    def validated(self, name: str) -> str:
        from proofeval.provers.coq.toolchain import resolve

        return resolve(name).name if name else ""

    def describe(self, name: str) -> System:
        from proofeval.provers.coq.toolchain import resolve

        chain = resolve(name)
        return System(chain.describe(), chain.root)


TOOLCHAINS = _Toolchains()

TACTICS = ("lia", "nia", "lra", "nra", "firstorder", "intuition", "auto", "easy", "congruence")
# The baselines' tools: CoqHammer's hammer and sauto live in the Hammer library; lia, nia,
# lra and nra in Lia, Lra and Psatz.
BASELINES = {
    "portfolio": Baseline(
        (*TACTICS, "sauto"), tools=f"From Coq Require Import Lia Lra Psatz.\n{hammer.IMPORT}"
    ),
    "hammer": Baseline(
        ("hammer", "sauto"), tools=hammer.IMPORT, timeout=hammer.TIMEOUT,
        limit_line=hammer.limit_line,
    ),
}  # fmt: skip


def _baseline_notes(method: str, problems: Sequence[Problem], settings: CheckSettings) -> list[str]:
    """For the hammer: the ATPs CoqHammer finds in each toolchain's system."""
    if method != "hammer":
        return []
    notes = []
    for system in _systems(problems, settings):
        if system.root is None:
            continue  # not installed: each of its attempts says so as its ERROR
        present, missing = hammer.atps(system.root)
        notes.append(
            f"CoqHammer's ATPs in {system.description}: {', '.join(present) or 'none'} "
            f"present; {', '.join(missing) or 'none'} missing (Vampire is not in Debian)"
        )
    return notes


BACKEND = Backend(
    name="coq",
    title="Coq",
    fence="coq",
    aliases=("rocq",),
    checker=_checker,
    states=_states,
    answer=answer,
    steps=steps,
    probe="idtac.",
    systems=_systems,
    warnings=_warnings,
    toolchains=TOOLCHAINS,
    baselines=BASELINES,
    tactic="Proof. {}. Qed.",
    baseline_notes=_baseline_notes,
)
