"""The first Coq integrity layer on its own (no Coq): sentences split as Coq's lexer
splits them, and the allow-list that decides what an answer may say."""

from __future__ import annotations

import pytest

from proofeval.provers.coq.policy import Refusal, prepare, steps, theorem_name
from proofeval.provers.coq.risks import benchmark_warnings, header_risks
from proofeval.provers.coq.sentences import SentenceError, split


def texts(source: str) -> list[str]:
    return [s.text for s in split(source)]


def test_sentences_end_at_a_period_before_blank_or_end() -> None:
    assert texts("intros n.\n  rewrite Nat.add_0_r.reflexivity. auto.") == [
        "intros n",
        "rewrite Nat.add_0_r.reflexivity",
        "auto",
    ]


def test_comments_nest_and_hold_strings() -> None:
    source = 'intros. (* outer (* inner. *) still. "*)" . *) auto.'
    assert texts(source) == ["intros", "auto"]


def test_strings_hold_periods_and_doubled_quotes() -> None:
    assert texts('idtac "a. b"" c. ". auto.') == ['idtac "a. b"" c. "', "auto"]


def test_a_string_opening_a_comment_does_not_hide_a_command() -> None:
    assert texts('idtac "(*". Axiom c : False. idtac "*)".') == [
        'idtac "(*"',
        "Axiom c : False",
        'idtac "*)"',
    ]


def test_bullets_braces_and_selectors() -> None:
    source = "split.\n- auto.\n+ { exact I. }\n** auto.\n2: { auto. }\n[x]: {\n}"
    assert texts(source) == [
        "split", "-", "auto", "+", "{", "exact I", "}", "**", "auto", "2: {", "auto", "}",
        "[x]: {", "}",
    ]  # fmt: skip


def test_double_dot_is_not_an_end_but_ellipsis_is() -> None:
    sentences = split("exact [x ; .. ; y]. auto...")
    assert [s.text for s in sentences] == ["exact [x ; .. ; y]", "auto"]
    assert sentences[1].ellipsis


@pytest.mark.parametrize("source", ["intros", "auto. (* open", 'idtac "open.', "auto.... x."])
def test_unterminated_text_is_refused(source: str) -> None:
    with pytest.raises(SentenceError):
        split(source)


def test_theorem_name() -> None:
    assert theorem_name("Theorem t1 : True.") == "t1"
    assert theorem_name("(* c *) Lemma x' (n : nat): n = n.") == "x'"
    assert theorem_name("Definition d := 1.") is None


def test_the_answer_reaches_coq_as_written_with_qed_when_missing() -> None:
    assert prepare("intros. all: lia.", "thm").proof == "intros. all: lia.\nQed."
    closed = "Proof. split. - exact I. - { auto. } Defined."
    assert prepare(closed, "thm").proof == closed


def test_auxiliary_lemmas_go_before_the_statement_as_written() -> None:
    script = prepare("Lemma aux (n : nat) : n = n. Proof. reflexivity. Qed. apply aux.", "thm")
    assert script.lemmas == "Lemma aux (n : nat) : n = n. Proof. reflexivity. Qed. "
    assert script.proof == "apply aux.\nQed."


def test_proof_using_and_with_open_a_proof_and_proof_term_does_not() -> None:
    for opener in ["Proof using.", "Proof using n m.", "Proof with auto."]:
        assert prepare(f"{opener} intros; lia. Qed.", "thm").proof.startswith(opener)
    assert not refusal("Proof I.").cheating
    assert "second Proof" in str(refusal("Proof. Proof using. auto."))


def test_proof_state_steps_are_parenthesized() -> None:
    assert steps("intros. all: lia.", "thm") == [" (intros).", "all: (lia)."]
    assert steps("split. - { auto. }", "thm") == [" (split).", "-", "{", " (auto).", "}"]


def refusal(answer: str) -> Refusal:
    with pytest.raises(Refusal) as caught:
        prepare(answer, "thm")
    return caught.value


CHEATS = {
    "admitted": "intros. Admitted.",
    "admit": "intros. admit.",
    "admit in a combinator": "intros; try (solve [admit]).",
    "give_up": "give_up.",
    "abort": "Abort.",
    "axiom": "Axiom cheat : False. exact (False_ind _ cheat).",
    "parameter": "Parameter p : False. destruct p.",
    "declare ml module": 'Declare ML Module "evil_plugin". auto.',
    "load": 'Load "/etc/passwd". auto.',
    "drop": "Drop.",
    "redirect": 'Redirect "out" Print nat. auto.',
    "extraction to a file": 'Extraction "out.ml" nat. auto.',
    "require": "Require Import Classical. auto.",
    "from require": "From Coq Require Import Classical. auto.",
    "unset guard": "Unset Guard Checking. auto.",
    "unset positivity": "Unset Positivity Checking. auto.",
    "unset universe": "Unset Universe Checking. auto.",
    "local unset": "Local Unset Guard Checking. auto.",
    "bypass_check attribute": "#[bypass_check(guard)] Fixpoint f (n : nat) : nat := f n. auto.",
    "fail-wrapped": "Fail Axiom c : False. auto.",
    "second theorem of the same name": "Lemma thm : True. Proof. exact I. Qed. auto.",
    "closes early, states another": "auto. Qed. Theorem other : True. Proof. exact I. Qed.",
    "a theorem inside the proof": "intros. Lemma x : True. Proof. exact I. Qed.",
    "string opening a comment": 'idtac "(*". Axiom c : False. idtac "*)".',
    "backtracking": "auto. Undo. auto.",
    "reset": "Reset Initial. auto.",
    "aux lemma admitted": "Lemma aux : False. Admitted. destruct aux.",
    "aux lemma with admit": "Lemma aux : False. Proof. admit. Qed. destruct aux.",
}


@pytest.mark.parametrize("answer", CHEATS.values(), ids=CHEATS.keys())
def test_escapes_are_cheating(answer: str) -> None:
    assert refusal(answer).cheating


NOT_PROOFS = {
    "unterminated comment": "auto. (* unfinished",
    "a query": "Check nat. auto.",
    "a definition": "Definition d := 1. auto.",
    "an ltac definition": "Ltac t := auto. t.",
    "a second Proof": "Proof. auto. Proof.",
    "an ellipsis": "auto...",
    "an unproved aux lemma": "Lemma aux : True. Proof. exact I.",
    "an aux lemma without Proof or Qed": "Lemma aux : True. exact I.",
}


@pytest.mark.parametrize("answer", NOT_PROOFS.values(), ids=NOT_PROOFS.keys())
def test_other_commands_are_not_proofs(answer: str) -> None:
    assert not refusal(answer).cheating


def test_comment_and_string_tricks_stay_in_one_sentence() -> None:
    answer = 'intros. (* . Axiom c : False. *) idtac "x. Axiom c : False.". lia.'
    assert prepare(answer, "thm").proof == answer + "\nQed."


# --- what reaches Coq 8.16's known kernel bugs (tests/test_coq_critical.py runs them) ---

KERNEL_RISKS = {
    "fix term": "exact (fix f (n : nat) : False := f n).",
    "fix tactic": "fix IH 1. exact IH.",
    "cofix tactic": "cofix CIH. exact CIH.",
    "fix in pose": "pose (f := fix f (n : nat) : nat := 0). exact I.",
    "let fix": "exact (let fix f (n : nat) : nat := 0 in I).",
    "fix in ltac:()": "refine ltac:(fix f 1; exact f).",
    "fix in constr:()": "let t := constr:(fix f (n : nat) : nat := 0) in idtac.",
    "fix after a selector": "1: fix IH 1.",
    "fix in a combinator": "intros; try (solve [fix IH 1; auto]).",
    "fix after a comment": "exact ((*c*)fix f (n : nat) : nat := 0).",
    "fix in an aux lemma's statement": "Lemma a : (fix f (n : nat) : nat := 0) 0 = 0. "
    "Proof. reflexivity. Qed. exact I.",
    "fix in an aux lemma's proof": "Lemma a : nat -> nat. Proof. fix f 1. exact f. Defined. auto.",
    "fix in the restated theorem": "Theorem thm : True. Proof. fix f 1. Qed.",
    "vm_compute": "vm_compute. reflexivity.",
    "vm_compute in a hypothesis": "intros H. vm_compute in H. auto.",
    "vm_compute in eval": "let x := eval vm_compute in 1 in idtac.",
    "native_compute": "native_compute. reflexivity.",
    "vm_cast_no_check": "vm_cast_no_check (eq_refl 4).",
    "native_cast_no_check": "native_cast_no_check (eq_refl 4).",
    "VM cast": "exact (eq_refl <: 2 + 2 = 4).",
    "native cast": "exact (eq_refl <<: 2 + 2 = 4).",
    "VM cast without blanks": "exact (eq_refl<:2 + 2 = 4).",
}


@pytest.mark.parametrize("answer", KERNEL_RISKS.values(), ids=KERNEL_RISKS.keys())
def test_what_reaches_a_kernel_bug_is_refused_with_its_reason(answer: str) -> None:
    refused = refusal(answer)
    assert not refused.cheating
    assert "not allowed" in str(refused) or "cast" in str(refused)


SAFE_LOOKALIKES = {
    "in a string": 'idtac "fix vm_compute <:". exact I.',
    "in a comment": "(* fix, cofix, vm_compute, <: *) exact I.",
    "longer identifiers": "apply fix_eq; apply Fix_F; apply prefix_vm_compute'; apply fix'.",
    "unicode identifier": "apply fixα.",
    "qualified library lemma": "apply Wf.Fix_eq.",
    "less-than then colon": "assert (H : 1 < 2) by auto. exact I.",
}


@pytest.mark.parametrize("answer", SAFE_LOOKALIKES.values(), ids=SAFE_LOOKALIKES.keys())
def test_lookalikes_are_not_refused(answer: str) -> None:
    prepare(answer, "thm")


def test_admitted_after_a_selector_is_cheating() -> None:
    for answer in ["1: Admitted.", "[thm]: Admitted.", "all: Admitted.", "2 : Abort."]:
        assert refusal(answer).cheating, answer


def test_a_restated_theorem_is_dropped() -> None:
    restated = "Theorem thm (n : nat) : n = n.\nProof. reflexivity. Qed."
    assert prepare(restated, "thm") == prepare("Proof. reflexivity. Qed.", "thm")
    script = prepare("Lemma aux : True. Proof. exact I. Qed.\n" + restated, "thm")
    assert "aux" in script.lemmas and "thm" not in script.lemmas
    assert refusal(restated + " auto.").cheating  # text after its Qed
    # a statement about a fixpoint, restated, is not the answer's fixpoint
    about_fix = "Theorem thm : (fix f (n : nat) : nat := n) 0 = 0. Proof. reflexivity. Qed."
    assert prepare(about_fix, "thm").proof == "Proof. reflexivity. Qed."
    assert not refusal("Theorem thm : True. Proof. fix f 1. Qed.").cheating


def test_header_risks_are_named() -> None:
    assert header_risks("Require Import Arith Lia.\nModule M. Definition x := 1. End M.") == []
    assert header_risks("(* Module Type T. *) Require Import Uint63.") == []
    kinds = {
        "Module Type T. Parameter x : nat. End T.": "module types",
        "Module M : T. Definition x := 1. End M.": "module types",
        "Module F (X : T). End F.": "functors",
        "Module S := MSetList.Make Nat_as_OT.": "functors",
        "Primitive int := #int63_type.": "primitives",
        "Unset Guard Checking.": "unsafe flags",
        "#[bypass_check(guard)] Fixpoint f (n : nat) : nat := f n.": "unsafe flags",
        "Inductive sFalse : SProp := .": "SProp",
    }
    for header, kind in kinds.items():
        (found,) = header_risks(header)
        assert kind in found, header


def test_benchmark_warnings_count_problems_once_per_risk() -> None:
    problems = [
        {"prover": "coq", "header": "Module Type T. End T."},
        {"prover": "coq", "header": "Module Type U. End U."},
        {"prover": "hol-light", "header": "Module Type T. End T."},
        {"prover": "coq", "header": "Require Import Arith."},
    ]
    (warning,) = benchmark_warnings(problems)
    assert warning.startswith("2 Coq problems have a header that declares")
