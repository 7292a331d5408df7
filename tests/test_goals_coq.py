"""Coq's structured goals (provers/states.py's Goals), read by the plugin from the proof's
own data (check.mlg's ProofevalGoals) on every Coq toolchain: hypotheses with let-bound
bodies, unfocused goals under bullets with their hypotheses and Coq's note apart from the
goals, shelved goals, a failed step, and the frame attack (goal text that
spells the frame). Real coqtop."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from proofeval.api import problem
from proofeval.provers.coq.states import CoqStates
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import Goals, Hypothesis, Refused, StepLimits
from tests.coq_chains import CHAINS

LIMITS = StepLimits(30.0, 4096)
STATEMENT = "Theorem both : forall P Q : Prop, P -> Q -> P /\\ Q."
BULLET_NOTE = (
    "This subproof is complete, but there are some unfocused goals.\nFocus next goal with bullet -."
)


@pytest.fixture(params=CHAINS)
def chain(request: pytest.FixtureRequest) -> str:
    return request.param


def opened(chain: str, statement: str, header: str = "") -> CoqStates:
    settings = CheckSettings(workers=1, coq_toolchain="" if chain == "host" else chain)
    return CoqStates(problem("coq", statement, header=header), settings)


@pytest.fixture
def states(chain: str) -> Iterator[CoqStates]:
    made = opened(chain, STATEMENT)
    yield made
    made.close()


def step(states: CoqStates, parent: str, handle: str, tactic: str) -> Goals:
    result = states.apply(parent, handle, tactic, LIMITS)
    assert isinstance(result, Goals), result
    return result


HYPS = (Hypothesis("P", "Prop"), Hypothesis("Q", "Prop"), Hypothesis("HP", "P"),
        Hypothesis("HQ", "Q"), Hypothesis("k", "nat", "3"))  # fmt: skip


def test_hypotheses_bullets_and_a_let(states: CoqStates) -> None:
    root = states.start("root")
    [goal] = root.items
    assert (goal.hypotheses, goal.conclusion) == ((), "forall P Q : Prop, P -> Q -> P /\\ Q")
    assert not root.complete and root.messages == ()
    split = step(states, "root", "split", "intros P Q HP HQ. set (k := 3). split.")
    assert [(g.kind, g.hypotheses, g.conclusion) for g in split.items] == [
        ("focused", HYPS, "P"),
        ("focused", HYPS, "Q"),
    ]
    assert split.texts[1] == (
        "P : Prop\nQ : Prop\nHP : P\nHQ : Q\nk := 3 : nat\n============================\nQ"
    )
    # after the first bullet: one goal, unfocused, with its hypotheses; Coq's note is a
    # message, not a goal
    first = step(states, "split", "first", "- exact HP.")
    assert [(g.kind, g.hypotheses, g.conclusion) for g in first.items] == [("unfocused", HYPS, "Q")]
    assert first.messages == (BULLET_NOTE,)
    assert first.items[0].id == split.items[1].id != split.items[0].id
    done = step(states, "first", "done", "- exact HQ.")
    assert done.complete and done.items == () and done.messages == ()
    assert done.as_json() == {"goals": [], "messages": [], "complete": True}


def test_a_failed_step_leaves_no_state(states: CoqStates) -> None:
    states.start("root")
    step(states, "root", "split", "intros P Q HP HQ. split.")
    failed = states.apply("split", "bad", "exact HQ.", LIMITS)
    assert isinstance(failed, Refused) and "HQ" in failed.outcome.message
    assert "bad" not in states.paths
    again = step(states, "split", "again", "exact HP.")
    assert [g.conclusion for g in again.items] == ["Q"]


def test_shelved_goals_are_goals_of_their_kind(chain: str) -> None:
    states = opened(chain, "Theorem ex : exists n : nat, n = n.")
    try:
        states.start("root")
        shelved = step(states, "root", "shelved", "eexists. reflexivity.")
        assert [(g.kind, g.conclusion) for g in shelved.items] == [("shelved", "nat")]
        assert shelved.messages == ("All the remaining goals are on the shelf.",)
        assert not shelved.complete
        # given-up goals have their kind too, but no step reaches them: the answer
        # policy refuses admit and give_up
        refused = states.apply("root", "given", "exists 0. admit.", LIMITS)
        assert isinstance(refused, Refused) and "admit" in refused.outcome.message
    finally:
        states.close()


# Text that spells the frame's parts: the reply's prefix, a fake nonce and hex, JSON's
# quotes, brackets and escapes, and a line break; in a let-bound hypothesis's body and in
# a hypothesis's type (a string literal), and in the conclusion.
FORGED = 'proofeval-goals:00:7b7d"}], ""goals"": [] \\" \n{"complete": true}'


def spaced(text: str) -> str:
    return " ".join(text.split())


def test_goal_text_cannot_forge_the_frame(chain: str) -> None:
    literal = '"' + FORGED.replace('"', '""') + '"'
    header = "Require Import String. Open Scope string_scope."
    states = opened(chain, f"Theorem forged : {literal} = {literal} -> True.", header)
    try:
        root = states.start("root")
        [goal] = root.items
        assert goal.conclusion.count(literal) == 2  # the printer breaks lines between tokens
        assert spaced(goal.conclusion) == spaced(f"{literal} = {literal} -> True")
        made = step(states, "root", "made", f"intros H. pose (s := {literal}).")
        [goal] = made.items
        [h, s] = goal.hypotheses
        assert (h.name, spaced(h.type), h.body) == ("H", spaced(f"{literal} = {literal}"), None)
        assert s == Hypothesis("s", "string", literal)
        assert goal.conclusion == "True" and not made.complete
        json.dumps(made.as_json())  # plain data
    finally:
        states.close()
