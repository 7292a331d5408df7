"""Forged theorems through OCaml 4.13's pattern-matching soundness bug (ocaml/ocaml#7241).

A match that reads a mutable field, runs code while matching (a `when` guard, or forcing
a `lazy` pattern) and then trusts what it read before, reads a value of another type in
a later branch: a `(term list * term) ref` becomes a `thm` and `prove` accepts it. Each
variant must be refused before it runs, on false goals and on true ones; the control
answers show the same shapes without the forbidden construct are checked normally.
"""

from __future__ import annotations

import pytest

from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from tests.conftest import on_both_paths

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

GOALS = {"false": "`F`", "sum": "`2 + 3 = 6`", "lt": "`!n. n < n`", "true": "`1 + 1 = 2`"}


def tactic(forge: str) -> str:
    """A tactic whose justification returns `forged`, computed by `forge` from goal `w`."""
    return (
        f"((fun (_, w) -> let forged = ({forge}) in (null_meta, [], fun _ _ -> forged)) : tactic)"
    )


# Each of these got OK for every goal below before the rule (measured on OCaml 4.13.1).
FORGERIES = {
    "guard on a ref": """
        let r = ref (Either.Left TRUTH) and b = ref true in
        match (b, r) with
        | ({contents = false}, _) -> TRUTH
        | (_, {contents = Either.Right _}) -> TRUTH
        | _ when (r := Either.Right (ref ([], w)); false) -> TRUTH
        | ({contents = true}, {contents = Either.Left th}) -> th""",
    "lazy pattern": """
        let r = ref (Either.Left TRUTH) and b = ref true in
        let l = lazy (r := Either.Right (ref ([], w)); false) in
        match (b, r, l) with
        | ({contents = false}, _, _) -> TRUTH
        | (_, {contents = Either.Right _}, _) -> TRUTH
        | (_, _, lazy true) -> TRUTH
        | ({contents = true}, {contents = Either.Left th}, _) -> th""",
    "guard inside a tactical": """
        let r = ref (Either.Left TRUTH) and b = ref true in
        let pick () = match (b, r) with
          | ({contents = false}, _) -> TRUTH
          | (_, {contents = Either.Right _}) -> TRUTH
          | _ when (r := Either.Right (ref ([], w)); false) -> TRUTH
          | ({contents = true}, {contents = Either.Left th}) -> th in
        snd (ALL_TAC ([], w), pick ())""",
}

# The same guards on other mutable values: not shown to forge here, refused by the same rule.
GUARDED = {
    "guard on an array": """
        let a = [| Either.Left TRUTH |] and b = ref true in
        match (b, a) with
        | ({contents = false}, _) -> TRUTH
        | (_, [| Either.Right _ |]) -> TRUTH
        | _ when (a.(0) <- Either.Right (ref ([], w)); false) -> TRUTH
        | ({contents = true}, [| Either.Left th |]) -> th
        | _ -> TRUTH""",
    "guard in function": """
        let r = ref (Either.Left TRUTH) and b = ref true in
        (function
         | ({contents = false}, _) -> TRUTH
         | (_, {contents = Either.Right _}) -> TRUTH
         | _ when (r := Either.Right (ref ([], w)); false) -> TRUTH
         | ({contents = true}, {contents = Either.Left th}) -> th) (b, r)""",
    "guard on an exception": """
        let r = ref (Either.Left TRUTH) in
        try failwith "x" with
        | Failure _ when (r := Either.Right (ref ([], w)); false) -> TRUTH
        | _ -> (match !r with Either.Left th -> th | Either.Right _ -> TRUTH)""",
}

CONTROLS = {
    "match without a guard": """
        let r = ref (Either.Left TRUTH) in
        match r with {contents = Either.Left th} -> th | {contents = Either.Right _} -> TRUTH""",
    "a lazy value forced outside a pattern": "Lazy.force (lazy TRUTH)",
    "a recursive function": "let rec f n = if n = 0 then TRUTH else f (n - 1) in f 3",
}


@pytest.fixture(scope="module")
def goals(core: WarmProcess) -> WarmProcess:
    for name, goal in GOALS.items():
        assert core.add_goal(name, goal) is None
    return core


@pytest.mark.parametrize("goal", GOALS)
@pytest.mark.parametrize("forge", FORGERIES)
def test_a_forged_theorem_is_refused_before_it_runs(
    goals: WarmProcess, forge: str, goal: str
) -> None:
    out = goals.check(goal, tactic(FORGERIES[forge]), 10.0, 2048)
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), out


@pytest.mark.parametrize("forge", GUARDED)
def test_every_guard_is_refused(goals: WarmProcess, forge: str) -> None:
    out = goals.check("false", tactic(GUARDED[forge]), 10.0, 2048)
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), out


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("(let rec x = 1 :: x in ARITH_TAC)", "`let rec` may only define functions"),
        ("(fun (type a) (g : goal) -> ARITH_TAC g)", "locally abstract types"),
    ],
)
def test_constructs_the_type_checker_has_been_wrong_about_are_refused(
    goals: WarmProcess, answer: str, why: str
) -> None:
    out = goals.check("true", answer, 10.0, 2048)
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), out
    assert why in out.message


@pytest.mark.parametrize("control", CONTROLS)
def test_the_same_shapes_without_the_construct_are_checked(
    goals: WarmProcess, control: str
) -> None:
    """TRUTH is not the goal: FAIL at check, so the rule, not a parse error, refused the above."""
    out = goals.check("true", tactic(CONTROLS[control]), 10.0, 2048)
    assert (out.verdict, out.stage) == (Verdict.FAIL, Stage.CHECK), out
    assert "wrong theorem" in out.message


def test_honest_proofs_with_matches_and_recursion_are_ok(goals: WarmProcess) -> None:
    answer = (
        "(let rec repeat n t = if n = 0 then ALL_TAC else t THEN repeat (n - 1) t in"
        " fun g -> match g with (_, w) when false -> NO_TAC g | _ -> repeat 1 ARITH_TAC g)"
    )
    assert goals.check("true", answer, 10.0, 2048).verdict == Verdict.CHEATING  # a guard
    answer = (
        "(let rec repeat n t = if n = 0 then ALL_TAC else t THEN repeat (n - 1) t in"
        " fun g -> match g with ([], _) -> repeat 1 ARITH_TAC g | _ -> NO_TAC g)"
    )
    assert goals.check("true", answer, 10.0, 2048).verdict == Verdict.OK
