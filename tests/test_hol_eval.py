"""Answers the native path evaluates from their tree instead of compiling them
(ocaml/proofeval_eval.ml, proofeval_tree.ml): the verdicts of the bytecode toplevel
(another implementation, the oracle here), names resolved as the compiler resolves them
(a context's own definition wins), ill-typed trees compiled and refused with the
compiler's reason, the deny-list before any of it; and the table's witnesses, read from
the core's interface (values.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proofeval.model import Outcome, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.hol_light.values import declarations, witness
from tests.conftest import with_context

GOAL = "`!n. n + 0 = n`"
# Each evaluated from its tree natively, unless said otherwise.
ANSWERS = [
    "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]",
    "ARITH_TAC",
    "EVERY [GEN_TAC; ARITH_TAC]",
    "GEN_TAC THENL [ARITH_TAC]",
    "GEN_TAC THEN SPEC_TAC (`n:num`, `m:num`) THEN ARITH_TAC",  # a pair
    "MP_TAC (CONJUNCT1 ADD_CLAUSES) THEN ARITH_TAC",
    "REWRITE_TAC[MULT_CLAUSES]",  # FAIL: the goal is left
    'FAIL_TAC "stop"',  # a string
    "FIRST_ASSUM MP_TAC",  # FAIL: no assumption
    "MP_TAC (SPEC `0` ADD_CLAUSES)",  # Failure while the tactic is made
    "GEN_TAC THEN CONV_TAC NUM_REDUCE_CONV",
    "ARITH_TAC ORELSE ALL_TAC",
    "REWRITE_TAC ARITH_TAC",  # ill-typed: compiled, and refused by the compiler
    "REWRITE_TAC [ARITH_TAC]",
    "MAP_EVERY X_GEN_TAC [`m:num`] THEN ARITH_TAC",  # polymorphic: compiled
    "ARITH_TAC ARITH_TAC",  # a tactic applied to a tactic: no tree type-checks
    "CONJ_TAC (`x:bool`, `y:bool`)",
    "EVERY [" * 300 + "ALL_TAC" + "]" * 300,  # deeper than a tree may be: compiled
    "EVERY [" * 20 + "GEN_TAC; ARITH_TAC" + "]" * 20,
    "CHEAT_TAC",  # the deny-list, before any tree
    "ARITH_TAC THEN new_axiom `F`",
]


def _process(base: WarmProcess, header: str = "") -> WarmProcess:
    proc = with_context(base, header) if header else base.clone()
    assert proc.add_goal("g", GOAL) is None
    return proc


@pytest.fixture(scope="module")
def both(
    hol_bytecode_base: WarmProcess, hol_native_base: WarmProcess
) -> Iterator[tuple[WarmProcess, WarmProcess]]:
    bytecode, native = _process(hol_bytecode_base), _process(hol_native_base)
    yield bytecode, native
    bytecode.close()
    native.close()


def _shown(outcome: Outcome) -> tuple[str, str]:
    return outcome.verdict.value, outcome.stage.value


@pytest.mark.parametrize("answer", ANSWERS, ids=[f"{i}:{a[:30]}" for i, a in enumerate(ANSWERS)])
def test_native_verdicts_are_the_toplevels(
    both: tuple[WarmProcess, WarmProcess], answer: str
) -> None:
    bytecode, native = both
    expected = bytecode.check("g", answer, 30.0, 4096)
    got = native.check("g", answer, 30.0, 4096)
    assert _shown(got) == _shown(expected), (got, expected)


def test_the_answers_cover_every_verdict_they_name(both: tuple[WarmProcess, WarmProcess]) -> None:
    """The oracle's verdicts over ANSWERS: OK, FAIL, ERROR and CHEATING all occur (so the
    comparison above is not of one verdict)."""
    bytecode, _ = both
    seen = {bytecode.check("g", a, 30.0, 4096).verdict for a in ANSWERS}
    assert {Verdict.OK, Verdict.FAIL, Verdict.ERROR, Verdict.CHEATING} <= seen


def test_a_contexts_definition_of_a_core_name_is_the_one_used(
    hol_native_base: WarmProcess, hol_bytecode_base: WarmProcess
) -> None:
    """A context that defines ARITH_TAC again (as ALL_TAC, which proves nothing) makes
    `ARITH_TAC` its own: the core's ARITH_TAC, which would prove the goal, is not
    evaluated in its place. Through an argument too."""
    header = "let ARITH_TAC = ALL_TAC;;\nlet ADD_CLAUSES = TRUTH;;\n"
    for base in (hol_native_base, hol_bytecode_base):
        proc = _process(base, header)
        try:
            for answer in ("ARITH_TAC", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"):
                outcome = proc.check("g", answer, 30.0, 4096)
                assert outcome.verdict is Verdict.FAIL, (base.launcher.native, answer, outcome)
        finally:
            proc.close()


def test_the_compilers_reason_for_an_ill_typed_answer(both: tuple[WarmProcess, WarmProcess]):
    _, native = both
    outcome = native.check("g", "REWRITE_TAC ARITH_TAC", 30.0, 4096)
    assert outcome.verdict is Verdict.ERROR and "type" in outcome.message, outcome


W = "Proofeval_eval."
THM_TACTIC = f"{W}Arrow ({W}Thm, {W}Tactic)"
CONV = f"{W}Arrow ({W}Term, {W}Thm)"


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("tactic", f"{W}Tactic"),
        ("thm list -> tactic", f"{W}Arrow ({W}List ({W}Thm), {W}Tactic)"),
        ("term * term -> tactic", f"{W}Arrow ({W}Pair ({W}Term, {W}Term), {W}Tactic)"),
        ("thm_tactic", THM_TACTIC),
        ("thm -> tactic", THM_TACTIC),  # the same witness, as the types are the same
        ("(term -> thm) -> term -> thm", f"{W}Arrow ({CONV}, {CONV})"),
        ("conv -> conv", f"{W}Arrow ({CONV}, {CONV})"),
        ("('a -> tactic) -> 'a list -> tactic", None),  # polymorphic
        ("term * term * term -> thm", None),
        ("num -> num", None),
        ("int -> tactic -> tactic", None),
        ("thm -> Hol.thm", None),
        ("(thm", None),
    ],
)
def test_witnesses_of_printed_types(printed: str, expected: str | None) -> None:
    assert witness(printed) == expected


def test_declarations_join_a_type_printed_over_lines() -> None:
    signature = (
        "type tactic = goal -> goalstate\nval ARITH_TAC : tactic\n"
        "val LONG_TAC :\n  thm list ->\n  tactic\nval ( ++ ) : int -> int\n"
    )
    assert declarations(signature) == [("ARITH_TAC", "tactic"), ("LONG_TAC", "thm list -> tactic")]
