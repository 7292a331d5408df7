"""The one goal type (provers/states.py) and how each prover's reply becomes it, without a
prover: the JSON shape, goal ids, and the replies' framing (a reply that is not exactly
one well-formed frame gives no goals)."""

from __future__ import annotations

import json

import pytest

from proofeval.errors import CheckerError
from proofeval.provers.coq.states import framed_goals
from proofeval.provers.hol_light.states import goals_of
from proofeval.provers.states import Goal, Goals, Hypothesis
from proofeval.states.search import Found, Theorem, found, theorem

HYPS = (Hypothesis("n", "nat"), Hypothesis("k", "nat", "3"))


def test_the_json_shape() -> None:
    goal = Goal(HYPS, "n + 0 = n", "unfocused", "text")
    goals = Goals((goal,), ("a note",))
    assert goals.as_json() == {
        "goals": [
            {"id": goal.id, "kind": "unfocused", "text": "text", "conclusion": "n + 0 = n",
             "hypotheses": [{"name": "n", "type": "nat"},
                            {"name": "k", "type": "nat", "body": "3"}]},
        ],
        "messages": ["a note"],
        "complete": False,
    }  # fmt: skip
    assert Goals(()).as_json() == {"goals": [], "messages": [], "complete": True}
    assert goals.texts == ("text",)


def test_a_goals_id_is_its_hypotheses_and_conclusion() -> None:
    goal = Goal(HYPS, "n + 0 = n")
    assert goal.id == Goal(HYPS, "n + 0 = n", "shelved", "other text").id
    assert len({goal.id, Goal(HYPS[:1], "n + 0 = n").id, Goal(HYPS, "n = n").id}) == 3
    assert goal.id != Goal((Hypothesis("k", "nat", "4"), HYPS[0]), "n + 0 = n").id


def coq_reply(nonce: str, data: object) -> str:
    return f"proofeval-goals:{nonce}:{json.dumps(data).encode().hex()}\n"


COQ_GOAL = {"kind": "focused", "hyps": [{"name": "n", "type": "nat"}], "conclusion": "n = n"}


def test_coqs_reply_is_read_by_its_nonce_alone() -> None:
    data = {"goals": [COQ_GOAL], "messages": []}
    [goal] = framed_goals("noise\n" + coq_reply("abc", data), "abc").items  # type: ignore[union-attr]
    assert (goal.hypotheses, goal.conclusion) == ((Hypothesis("n", "nat"),), "n = n")
    assert goal.text == "n : nat\n============================\nn = n"
    assert framed_goals(coq_reply("other", data), "abc") is None
    assert framed_goals(coq_reply("abc", data) * 2, "abc") is None  # two replies: none


@pytest.mark.parametrize(
    "data",
    [
        {"goals": [COQ_GOAL]},
        {"goals": [COQ_GOAL | {"kind": "mine"}], "messages": []},
        {"goals": [COQ_GOAL | {"conclusion": 3}], "messages": []},
        {"goals": [COQ_GOAL | {"hyps": [{"name": "n"}]}], "messages": []},
        {"error": "the goals failed"},
        [],
    ],
)
def test_a_coq_reply_that_is_not_goals_gives_none(data: object) -> None:
    assert framed_goals(coq_reply("abc", data), "abc") is None


def test_hol_lights_fields_are_read_by_their_counts() -> None:
    fields = ["  0 [`a < b`] (lt)\n`a <= b`", "1", "lt", "a < b", "a <= b", "`T`", "0", "T"]
    first, second = goals_of(2, fields)
    assert (first.hypotheses, first.conclusion, first.text) == (
        (Hypothesis("lt", "a < b"),),
        "a <= b",
        fields[0],
    )
    assert (second.hypotheses, second.conclusion) == ((), "T")
    for count, bad in [(2, fields[:-1]), (1, fields), (1, ["t", "x", "c"]), (1, ["t", "2", "l"])]:
        with pytest.raises(CheckerError):
            goals_of(count, bad)


def test_search_results_are_names_and_statements() -> None:
    assert theorem("Nat.add_0_r: forall n : nat,\n  n + 0 = n") == Theorem(
        "Nat.add_0_r", "forall n : nat,\n  n + 0 = n"
    )
    assert theorem("ADD_0: |- !m. m + 0 = m") == Theorem("ADD_0", "|- !m. m + 0 = m")
    assert found(["a: x", "b: y", "c: z"], 2) == Found((Theorem("a", "x"), Theorem("b", "y")), True)
    assert found(["a: x"], 2).as_json() == {
        "theorems": [{"name": "a", "statement": "x"}],
        "more": False,
    }
    assert len(theorem("a: " + "x" * 10000).statement) == 4000
