"""Answer extraction: what of a model's output is checked (fences are in test_inputs.py).

The rule that matters for integrity: for Lean and Coq only the proof is kept, so a model
that restates the theorem (with an easier statement, or a second declaration) never has
its statement checked in place of the benchmark's.
"""

from __future__ import annotations

import pytest

from proofeval.generate.extract import after_marker, extract, fenced_block
from proofeval.provers.coq.answers import coq_proof
from proofeval.provers.lean4.answers import lean_proof

# --- final-answer marker and block choice -------------------------------------------------


def test_the_marker_keeps_what_follows_its_last_occurrence():
    output = "I will write **Final Answer** at the end.\n**Final Answer**\n```\nARITH_TAC\n```"
    assert after_marker(output, "**Final Answer**") == "\n```\nARITH_TAC\n```"
    assert extract(output, marker="**Final Answer**") == "ARITH_TAC"


def test_without_the_marker_the_whole_output_is_used():
    assert after_marker("```\nMESON_TAC[]\n```", "FINAL") == "```\nMESON_TAC[]\n```"
    assert after_marker("text", None) == "text"


def test_the_marker_selects_the_block_after_it_not_the_last_block():
    output = "Draft:\n```\nCHEAT_TAC\n```\nFINAL\n```\nARITH_TAC\n```\nCheck:\n```\nX\n```"
    assert extract(output, marker="FINAL", block="first") == "ARITH_TAC"
    assert extract(output, marker="FINAL") == "X"


def test_first_and_last_block():
    output = "```\nA\n```\ntext\n```\nB\n```"
    assert fenced_block(output, "first") == "A"
    assert fenced_block(output, "last") == "B"


def test_an_answer_cut_off_mid_block_keeps_its_partial_content():
    assert (
        extract("Plan.\n```ocaml\nREPEAT STRIP_TAC THEN\n  ARITH")
        == "REPEAT STRIP_TAC THEN\n  ARITH"
    )


def test_hol_light_answers_are_kept_whole():
    tactic = "CONV_TAC(ONCE_DEPTH_CONV let_CONV) THEN\n  REWRITE_TAC[`theorem := x`]"
    assert extract(f"```ocaml\n{tactic}\n```", "hol-light") == tactic


# --- Lean ---------------------------------------------------------------------------------

LEAN_CASES = {
    "header on the by line": (
        "theorem add_zero' (n : ℕ) : n + 0 = n := by\n  simp",
        "  simp",
    ),
    "tactics after `by` on the same line": (
        "theorem t (n : ℕ) : n + 0 = n := by simp\n  done",
        "  simp\n  done",
    ),
    "one line": ("theorem t : 1 = 1 := by rfl", "  rfl"),
    "an identifier that starts with by": (
        "theorem t : P := byContra_helper\n",
        "byContra_helper",
    ),
    "term proof": ("lemma t : 2 + 2 = 4 := rfl", "rfl"),
    "attribute and modifiers": (
        "@[simp] private theorem t : True := by\n  trivial",
        "  trivial",
    ),
    "`:=` inside a binder": (
        "theorem t (f : ℕ → ℕ := fun x => x) {h : let y := 1; y = 1} : f 0 = 0 := by\n  rfl",
        "  rfl",
    ),
    "a comment that looks like a header": (
        "-- theorem fake : True := by trivial\n/- lemma also : 1 = 1 := rfl -/\n"
        "theorem real : 1 + 1 = 2 := by\n  norm_num",
        "  norm_num",
    ),
    "a string holding `:=`": (
        'theorem t : "a := b".length = 6 := by\n  decide',
        "  decide",
    ),
    "imports and an open before the theorem": (
        "import Mathlib\nopen Nat\n\ntheorem t : 0 < 1 := by\n  exact Nat.one_pos",
        "  exact Nat.one_pos",
    ),
    "no header: a leading `by` only is dropped": ("by\n  omega", "  omega"),
    "no header, no `by`": ("  omega", "  omega"),
}


@pytest.mark.parametrize("case", LEAN_CASES)
def test_lean_header_is_stripped(case: str):
    code, proof = LEAN_CASES[case]
    assert lean_proof(code) == proof


def test_a_restated_easier_lean_theorem_leaves_only_its_proof():
    """The model proves `True` instead of the benchmark's goal: only `trivial` goes on."""
    output = "Here it is:\n```lean4\ntheorem hard_goal : True := by\n  trivial\n```"
    assert extract(output, "lean4") == "  trivial"
    assert extract(output, "lean") == "  trivial"


def test_a_second_declaration_stays_inside_the_proof_text():
    """Only the first declaration's header is removed; anything after is proof text, which
    the checker appends to the benchmark's own statement, never a replacement for it."""
    code = "lemma helper : 1 = 1 := by\n  rfl\ntheorem main : 2 = 2 := by\n  rfl"
    proof = lean_proof(code)
    assert not proof.startswith("lemma") and proof.startswith("  rfl")


# --- Coq ----------------------------------------------------------------------------------

COQ_CASES = {
    "Theorem, Proof, Qed": (
        "Theorem add_0_r : forall n : nat, n + 0 = n.\nProof.\n  intros n. lia.\nQed.",
        "intros n. lia.",
    ),
    "Lemma with Defined": ("Lemma t : True.\nProof. exact I. Defined.", "exact I."),
    "Proof using": ("Lemma t : P.\nProof using H.\n  exact H.\nQed.", "exact H."),
    "no Proof line": ("Example e : 1 = 1. reflexivity. Qed.", "reflexivity."),
    "Admitted is kept for the checker": ("Theorem t : False.\nProof.\nAdmitted.", "Admitted."),
    "Abort is kept for the checker": ("Theorem t : False.\nProof. auto. Abort.", "auto. Abort."),
    "qualified names and decimals in the statement": (
        "Theorem t : Nat.add 0 1 = 1.\nProof. exact (Nat.add_0_l 1). Qed.",
        "exact (Nat.add_0_l 1).",
    ),
    "a comment holding Qed and Theorem": (
        "(* Theorem fake : True. Qed. *)\nTheorem t : 1 = 1.\nProof.\n"
        "  (* not done: Qed. *) reflexivity.\nQed.",
        "(* not done: Qed. *) reflexivity.",
    ),
    "a string holding a period": (
        'Lemma t : String.length "a. Qed." = 7.\nProof. reflexivity. Qed.',
        "reflexivity.",
    ),
    "an identifier ending in Theorem": (
        "intros. apply my_Theorem. Qed.",
        "intros. apply my_Theorem.",
    ),
    "no header": ("intros. reflexivity.", "intros. reflexivity."),
    "Require before the theorem": (
        "Require Import Lia.\nTheorem t : forall n, n + 0 = n.\nProof. lia. Qed.",
        "lia.",
    ),
}


@pytest.mark.parametrize("case", COQ_CASES)
def test_coq_header_is_stripped(case: str):
    code, proof = COQ_CASES[case]
    assert coq_proof(code) == proof


def test_a_restated_coq_theorem_leaves_only_its_proof():
    output = "```coq\nTheorem goal : 0 = 0.\nProof.\n  reflexivity.\nQed.\n```\nDone."
    assert extract(output, "coq") == "reflexivity."
    assert extract(output, "rocq") == "reflexivity."


def test_auxiliary_lemmas_before_the_benchmark_theorem_are_kept_whole():
    """The policy checks auxiliary lemmas under the same rules: extraction keeps them, and
    takes the proof of the benchmark's theorem, not of the first declaration."""
    output = (
        "```coq\nLemma helper : forall n, n + 0 = n.\nProof. intros. lia. Qed.\n\n"
        "Theorem goal : 2 + 0 = 2.\nProof.\n  apply helper.\nQed.\n```"
    )
    statement = "Theorem goal : 2 + 0 = 2."
    assert extract(output, "coq", statement=statement) == (
        "Lemma helper : forall n, n + 0 = n.\nProof. intros. lia. Qed.\napply helper."
    )
    assert extract(output, "coq") == "intros. lia."  # without the statement: the first one
    renamed = output.replace("Theorem goal", "Theorem goal'")
    assert extract(renamed, "coq", statement=statement) == "intros. lia."  # goal' is not goal


def test_marker_block_and_header_rules_compose():
    output = (
        "Attempt:\n```lean4\ntheorem t : 1 = 1 := by\n  sorry\n```\n"
        "FINAL ANSWER\n```lean4\ntheorem t : 1 = 1 := by\n  rfl\n```"
    )
    assert extract(output, "lean4", block="first", marker="FINAL ANSWER") == "  rfl"
