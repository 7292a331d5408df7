"""Coq's known kernel bugs (rocq-prover/rocq, dev/doc/critical-bugs.md) against the
checker, on every Coq toolchain installed (the host's 8.16.1, Debian 13's 8.20.1; a
toolchain not built is a skipped case that says how to build it). Each entry that an
answer can reach is here three times: reproduced with the toolchain's plain coqc where
its Coq has the bug (the attack is real: False is proved), as an answer (the
answer-language filter refuses it at precheck), and with the filter out of the way (a
header's innocent-looking Ltac builds the same term, the answer only calls it: the
proof-term audit alone must keep it from OK). The reproductions are written for these
tests, after the bug reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq.session import coq_version
from proofeval.provers.coq.toolchain import OCAML_RUNTIME, resolve
from proofeval.provers.interface import CheckSettings, Job
from proofeval.runs.check import CheckOptions, run_check
from tests.coq_chains import CHAINS

pytestmark = pytest.mark.coq

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

FALSE = "Theorem thm : False."

# rocq #20413 (guard checker forgot the non-structural arguments of a fixpoint; 8.16 to
# 9.0.0): `loop`'s third argument calls `loop` on anything. A transparent constant keeps
# the kernel's conversion from unfolding the loop forever.
G20413_FIX = (
    "fix loop (a b : nat) (k : nat -> nat) {struct a} : nat := "
    "match a with S a' => loop a' (S b) (fun j => loop j 0 k) | O => S (k b) end"
)
G20413_LEMMAS = """
Lemma unfold_s : forall a b k, loop (S a) b k = loop a (S b) (fun j => loop j 0 k).
Proof. reflexivity. Qed.
Lemma unfold_o : forall b k, loop 0 b k = S (k b).
Proof. reflexivity. Qed.
"""
G20413_MAIN = """
pose proof (eq_trans (unfold_s 0 0 (fun x => x)) (unfold_o 1 (fun j => loop j 0 (fun x => x))))
  as E.
exact (n_Sn _ E).
"""
LOOP = "Lemma loop : nat -> nat -> (nat -> nat) -> nat.\nProof. {}. Defined."
G20413 = LOOP.format(f"exact ({G20413_FIX})") + G20413_LEMMAS + G20413_MAIN
G20413_LTAC = f"Ltac build_loop := exact ({G20413_FIX})."
G20413_VIA_LTAC = LOOP.format("build_loop") + G20413_LEMMAS + G20413_MAIN

# rocq #20455 (guard checker takes a match on a match for a subterm; 8.16 to 9.0.0).
G20455_TERM = """(fix go (n : nat) {struct n} :
    match n with 0 => False | S _ => True end -> False :=
  match n as m return match m with 0 => False | S _ => True end -> False with
  | 0 => fun h => h
  | S p => fun _ =>
    let step (b : bool) (e : b = true) (x : nat)
        (Hx : match x with 0 => False | S y => match y with 0 => False | S _ => True end end) :=
      go (match (if b then x else p) with 0 => p | S q => q end) _
    in step true eq_refl 5 I
  end) 1 I"""
G20455_REST = " subst b. destruct x as [|x]; simpl in Hx. - destruct Hx. - exact Hx."
G20455 = f"refine ({G20455_TERM})." + G20455_REST
G20455_LTAC = f"Ltac start_go := refine ({G20455_TERM})."
G20455_VIA_LTAC = "start_go." + G20455_REST

# rocq #21839 (guard checker reduces in the wrong context; 8.16 to 9.2.0).
G21839_TERM = """(fix r (u : unit) : False :=
    let k (z : False) := match z return False with end in
    let same y := y in
    r (((ltac:(fix r2 1; exact same)) : unit -> unit) u)) tt"""
G21839 = f"refine ({G21839_TERM})."
G21839_LTAC = f"Ltac spin := refine ({G21839_TERM})."
G21839_VIA_LTAC = "spin."

# rocq #19402 (the VM computes Uint63.addmuldiv wrongly for shifts of 64 and more; 8.10 to
# 8.19; coqchk, without a VM, catches it).
UINT63 = "Require Import Uint63.\n"
VM_REST = """
assert (H2 : addmuldiv 64 1 1 = 0%uint63) by reflexivity.
rewrite H2 in H. apply (f_equal (fun x => eqb x 0%uint63)) in H. compute in H. discriminate H.
"""
VM19402 = "assert (H : addmuldiv 64 1 1 = 1%uint63) by (vm_compute; reflexivity)." + VM_REST
VM19402_LTAC = "Ltac by_evaluation := vm_compute; reflexivity."
VM19402_VIA_LTAC = "assert (H : addmuldiv 64 1 1 = 1%uint63) by by_evaluation." + VM_REST

# The Coq versions each bug affects, as critical-bugs.md gives them (first, last).
AFFECTS = {
    "guard #20413": ((8, 16), (9, 0)),
    "guard #20455": ((8, 16), (9, 0)),
    "guard #21839": ((8, 16), (9, 2)),
    "vm #19402": ((8, 10), (8, 19)),
}


def affected(name: str, chain: str) -> bool:
    version = tuple(int(p) for p in coq_version(resolve(chain)).split(".")[:2])
    first, last = AFFECTS[name]
    return first <= version <= last


# name: (header, answer, header Ltac that builds it, answer that only calls the Ltac)
EXPLOITS = {
    "guard #20413": ("", G20413, G20413_LTAC, G20413_VIA_LTAC),
    "guard #20455": ("", G20455, G20455_LTAC, G20455_VIA_LTAC),
    "guard #21839": ("", G21839, G21839_LTAC, G21839_VIA_LTAC),
    "vm #19402": (UINT63, VM19402, VM19402_LTAC, VM19402_VIA_LTAC),
}


def coqc(header: str, answer: str, tmp_path: Path, chain: str) -> subprocess.CompletedProcess:
    """Compile header + `Theorem thm : False.` + answer with the toolchain's plain coqc
    (the answer's auxiliary lemmas before the theorem)."""
    lemmas, main = answer.rsplit("Qed.", 1) if answer.startswith("Lemma") else ("", answer)
    lemmas += "Qed." if lemmas else ""
    source = tmp_path / "Exploit.v"
    text = f"{header}\n{lemmas}\n{FALSE}\nProof.\n{main}\nQed.\nPrint Assumptions thm.\n"
    source.write_text(text)
    toolchain = resolve(chain)
    conf = tmp_path / "ocamlfind.conf"
    conf.write_text(f'path="{toolchain.ocaml_path()}"\n')
    prefix = toolchain.sandbox(writable=[tmp_path], sandbox=False)
    env = {"PATH": "/usr/bin:/bin", "OCAMLFIND_CONF": str(conf), **OCAML_RUNTIME}
    return subprocess.run(
        [*prefix, "coqc", "-q", "-Q", str(tmp_path), "T", str(source)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=env,
    )


def coqc_proves_false(header: str, answer: str, tmp_path: Path, chain: str = "host") -> str:
    done = coqc(header, answer, tmp_path, chain)
    assert done.returncode == 0, done.stderr
    return done.stdout


def check_all(prob: Problem, answers: list[str], **settings) -> list[Outcome]:
    got: dict[int, Outcome] = {}
    jobs = [Job(Attempt(prob.id, i, a, a), prob, 60) for i, a in enumerate(answers)]
    CoqChecker(CheckSettings(**settings), lambda a, o: got.__setitem__(a.index, o)).run(jobs)
    return [got[i] for i in range(len(answers))]


@pytest.mark.parametrize("chain", CHAINS)
@pytest.mark.parametrize("name", EXPLOITS)
def test_each_bug_proves_false_with_plain_coqc(name: str, chain: str, tmp_path: Path) -> None:
    """Where the bug affects the toolchain's Coq, the exploit proves False with plain
    coqc (the attack is real there); where it does not, coqc rejects it."""
    header, answer, ltac, via_ltac = EXPLOITS[name]
    (tmp_path / "ltac").mkdir()
    if not affected(name, chain):
        assert coqc(header, answer, tmp_path, chain).returncode != 0
        return
    printed = coqc_proves_false(header, answer, tmp_path, chain)
    if not name.startswith("vm"):
        assert "Closed under the global context" in printed
    # the same through the header's tactic: the filter-free form is a real attack too
    assert coqc_proves_false(f"{header}{ltac}\n", via_ltac, tmp_path / "ltac", chain)


@pytest.mark.parametrize("chain", CHAINS)
def test_as_answers_they_are_refused_at_precheck(chain: str) -> None:
    outcomes = []
    for header, answer, _ltac, _via in EXPLOITS.values():
        prob = Problem(id="p", statement=FALSE, prover="coq", header=header or "\n")
        outcomes += check_all(prob, [answer], coq_toolchain=chain)
    assert [(o.verdict, o.stage) for o in outcomes] == [(Verdict.ERROR, Stage.PRECHECK)] * 4
    assert all("not allowed" in o.message for o in outcomes), outcomes


@pytest.mark.parametrize("chain", CHAINS)
def test_the_audit_alone_refuses_what_a_header_tactic_builds(chain: str) -> None:
    """The answer names no fix and no vm_compute: only the audit of the proof terms
    after Qed stands between it and OK, with and without coqchk (which shares the guard
    checker's bugs). A bug the toolchain's Coq does not have may fail earlier (FAIL:
    Coq rejects the term), never OK."""
    for name, (header, _answer, ltac, via_ltac) in EXPLOITS.items():
        prob = Problem(id="p", statement=FALSE, prover="coq", header=f"{header}{ltac}\n")
        for second in ({"replay": False}, {"coqchk": True}):
            (outcome,) = check_all(prob, [via_ltac], **second, coq_toolchain=chain)
            if not affected(name, chain):
                assert outcome.verdict in (Verdict.FAIL, Verdict.ERROR), (name, outcome)
                continue
            assert (outcome.verdict, outcome.stage) == (Verdict.ERROR, Stage.CHECK), (name, outcome)
            assert "proof term holds" in outcome.message, (name, outcome)


@pytest.mark.parametrize("chain", CHAINS)
def test_the_audit_keeps_honest_reflection_and_library_recursion(chain: str) -> None:
    """lia and ring close goals by a VM cast on inductive data, induction and simpl use
    the library's fixpoints: none of it reaches a listed bug, all of it stays OK."""
    prob = Problem(
        id="p",
        statement="Theorem thm : forall n m : nat, (n + m) * 2 = m + n + (n + m).",
        prover="coq",
        header="Require Import Arith Lia ZArith.\n",
    )
    answers = [
        "intros. lia.",
        "intros. ring.",
        "induction n; intros; simpl; lia.",
        "Lemma twice (k : nat) : k * 2 = k + k. Proof. lia. Qed. intros. rewrite twice. lia.",
    ]
    outcomes = check_all(prob, answers, coq_toolchain=chain)
    assert [o.verdict for o in outcomes] == [Verdict.OK] * len(answers), outcomes


@pytest.mark.parametrize("chain", CHAINS)
def test_the_audit_keeps_obviously_structural_fixpoints(chain: str) -> None:
    """A header tactic's `fix` whose every call is on a field of a match on its argument,
    and a library fixpoint copied into the term, stay OK."""
    header = (
        "Require Import Lia ZArith.\n"
        "Ltac by_recursion := fix IH 1; intros [|m];\n"
        "  [reflexivity | simpl; f_equal; match goal with H : forall _, _ |- _ => apply H end].\n"
        "Ltac by_copy p := exact (eq_refl ((fix pd (x : positive) : positive := match x with "
        "| xI q => xI (xO q) | xO q => xI (pd q) | xH => xH end) p)).\n"
    )
    recursion = Problem(id="r", statement=STATEMENT, prover="coq", header=header)
    copy = Problem(
        id="c",
        statement="Theorem thm : forall p, Pos.pred_double p = Pos.pred_double p.",
        prover="coq",
        header=header,
    )
    outcomes = check_all(recursion, ["by_recursion."], coq_toolchain=chain)
    outcomes += check_all(copy, ["intros p. by_copy p."], coq_toolchain=chain)
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.OK], outcomes


@pytest.mark.parametrize("chain", CHAINS)
def test_the_audit_refuses_a_vm_cast_over_primitive_integers_but_not_over_nat(chain: str) -> None:
    header = UINT63 + "Ltac by_evaluation := vm_compute; reflexivity.\n"
    prob = Problem(id="p", statement="Theorem thm : 2 + 2 = 4.", prover="coq", header=header)
    uint = Problem(
        id="q", statement="Theorem thm : (2 + 2 = 4)%uint63.", prover="coq", header=header
    )
    (on_nat,) = check_all(prob, ["by_evaluation."], coq_toolchain=chain)
    (on_uint,) = check_all(uint, ["by_evaluation."], coq_toolchain=chain)
    assert on_nat.verdict is Verdict.OK, on_nat
    assert on_uint.verdict is Verdict.ERROR and "primitive integers" in on_uint.message


# --- the honest answers the issue found misjudged --------------------------------------

STATEMENT = "Theorem thm : forall n : nat, n + 0 = n."
HONEST = Problem(id="h", statement=STATEMENT, prover="coq", header="Require Import Lia.\n")


def test_a_restated_statement_is_dropped_and_its_proof_checked_against_ours() -> None:
    answers = [
        f"{STATEMENT}\nProof. intros; lia. Qed.",
        "Theorem  thm :\n  forall n : nat, (* the goal *) n + 0 = n.\nProof.\n  lia.\nQed.",
        "Lemma thm (n : nat) : n + 0 = n. Proof. exact (eq_sym (plus_n_O n)). Qed.",  # differs
        "Theorem thm : True. Proof. exact I. Qed.",  # an easier statement: not ours
        f"Lemma helper : 0 = 0. Proof. reflexivity. Qed.\n{STATEMENT}\nProof. intros; lia. Qed.",
    ]
    outcomes = check_all(HONEST, answers)
    verdicts = [o.verdict for o in outcomes]
    assert verdicts == [Verdict.OK, Verdict.OK, Verdict.FAIL, Verdict.FAIL, Verdict.OK]


def test_lexer_errors_are_errors_at_precheck() -> None:
    outcomes = check_all(HONEST, ['idtac."" Admitted.', "intros.\u3000lia.", "exact\u3000I."])
    assert [(o.verdict, o.stage) for o in outcomes] == [(Verdict.ERROR, Stage.PRECHECK)] * 3


def test_admitted_after_a_goal_selector_is_cheating() -> None:
    outcomes = check_all(HONEST, ["1: Admitted.", "[thm]: Admitted.", "intros. all: Admitted."])
    assert [(o.verdict, o.stage) for o in outcomes] == [(Verdict.CHEATING, Stage.PRECHECK)] * 3


def test_native_compute_is_an_error_that_says_why() -> None:
    (outcome,) = check_all(HONEST, ["intros. native_compute. lia."])
    assert (outcome.verdict, outcome.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "native_compute" in outcome.message


def test_check_warns_once_per_benchmark_about_a_risky_header(tmp_path: Path, capsys) -> None:
    header = "Module Type T. Parameter x : nat. End T.\nRequire Import Lia.\n"
    problems = tmp_path / "problems.jsonl"
    rows = [
        {"id": f"p{i}", "prover": "coq", "header": header, "statement": STATEMENT} for i in range(3)
    ]
    problems.write_text("".join(json.dumps(row) + "\n" for row in rows))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"problem_id": r["id"], "answer": "intros; lia."}) + "\n" for r in rows)
    )
    out = run_check(CheckOptions(problems=problems, out=tmp_path / "run", answers=answers))
    assert [row.verdict for row in out] == [Verdict.OK] * 3
    warnings = [line for line in capsys.readouterr().err.splitlines() if "module types" in line]
    assert len(warnings) == 1 and "3 Coq problems" in warnings[0]
