"""The Coq checker against real Coq 8.16 in the sandbox: every verdict, every attack
class end to end, and each integrity layer on its own (the policy is tested alone in
test_coq_policy.py)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq import verdict as coq_verdict
from proofeval.provers.coq.recheck import recheck
from proofeval.provers.coq.session import CoqSession, Limits
from proofeval.provers.coq.toolchain import resolve
from proofeval.provers.interface import CheckSettings, Job
from tests.coq_chains import CHAINS

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

pytestmark = pytest.mark.coq

HEADER = "Require Import Arith Lia NArith.\n"
STATEMENT = "Theorem thm : forall n : nat, n + 0 = n."


def problem(header: str = HEADER, statement: str = STATEMENT, pid: str = "p") -> Problem:
    return Problem(id=pid, statement=statement, prover="coq", header=header)


def check_all(
    answers: list[str], prob: Problem | None = None, timeout: float = 30, **settings
) -> list[Outcome]:
    prob = prob or problem()
    got: dict[int, Outcome] = {}
    jobs = [Job(Attempt(prob.id, i, a, a), prob, timeout) for i, a in enumerate(answers)]
    CoqChecker(CheckSettings(**settings), lambda a, o: got.__setitem__(a.index, o)).run(jobs)
    return [got[i] for i in range(len(answers))]


def check(answer: str, prob: Problem | None = None, **kw) -> Outcome:
    return check_all([answer], prob, **kw)[0]


def verdicts(answers: list[str], **kw) -> list[Verdict]:
    return [o.verdict for o in check_all(answers, **kw)]


@pytest.mark.parametrize("chain", CHAINS)
def test_correct_proofs_are_ok(chain: str) -> None:
    answers = [
        "intros n. lia.",
        "Proof. intros n. rewrite Nat.add_0_r. reflexivity. Qed.",
        "intros. induction n.\n- reflexivity.\n- simpl. { rewrite IHn. reflexivity. }",
        "intros. (* a comment. with periods. *) lia. Defined.",
        "Lemma aux (m : nat) : m + 0 = m. Proof. lia. Qed. exact aux.",
    ]
    assert verdicts(answers, coq_toolchain=chain) == [Verdict.OK] * len(answers)


@pytest.mark.parametrize("chain", CHAINS)
def test_wrong_and_unfinished_proofs_fail(chain: str) -> None:
    answers = ["intros. reflexivity.", "intros n.", "exact I.", "nonexistent."]
    outcomes = check_all(answers, coq_toolchain=chain)
    assert [o.verdict for o in outcomes] == [Verdict.FAIL] * 4
    assert all(o.stage is Stage.CHECK for o in outcomes)
    assert "incomplete proof" in outcomes[1].message


@pytest.mark.parametrize("chain", CHAINS)
def test_a_failing_sentence_fails_the_whole_proof(chain: str) -> None:
    # coqtop would skip the bad sentence and go on; the checker loads the file whole
    outcome = check("intros. nonexistent_tactic. lia.", coq_toolchain=chain)
    assert outcome.verdict is Verdict.FAIL and "nonexistent_tactic" in outcome.message


@pytest.mark.parametrize("chain", CHAINS)
def test_admitting_is_cheating(chain: str) -> None:
    answers = ["intros. Admitted.", "admit.", "give_up.", "Abort.", "intros; try admit. lia."]
    outcomes = check_all(answers, coq_toolchain=chain)
    assert [o.verdict for o in outcomes] == [Verdict.CHEATING] * len(answers)
    assert all(o.stage is Stage.PRECHECK for o in outcomes)


ATTACKS = {
    "new axiom": "Axiom cheat : False. destruct cheat.",
    "declare ml module": 'Declare ML Module "coq-core.plugins.extraction". lia.',
    "load": 'Load "/etc/hostname". lia.',
    "drop": "Drop.",
    "redirect": 'Redirect "/var/tmp/out" Print nat. intros; lia.',
    "extraction to a file": 'Extraction "/var/tmp/out.ml" nat. intros; lia.',
    "require of something new": "Require Import Classical. intros; lia.",
    "unset guard checking": "Unset Guard Checking. intros; lia.",
    "bypass_check attribute": "#[bypass_check(guard)] Fixpoint f (n : nat) : nat := f n. lia.",
    "fail-wrapped command": "Fail Fail Axiom c : False. intros; lia.",
    "second theorem of the same name": "Lemma thm : True. Proof. exact I. Qed. intros; lia.",
    "closes early, states another": "intros; lia. Qed. Theorem other : 0 = 1. Proof. Admitted.",
    "string hiding a period": 'idtac "(*". Axiom c : False. idtac "*)". destruct c.',
}


@pytest.mark.parametrize("chain", CHAINS)
def test_every_attack_class_is_cheating(chain: str) -> None:
    outcomes = check_all(list(ATTACKS.values()), coq_toolchain=chain)
    for name, outcome in zip(ATTACKS, outcomes, strict=True):
        assert outcome.verdict is Verdict.CHEATING, (name, outcome)


def test_an_auxiliary_lemma_cannot_redefine_what_the_statement_says() -> None:
    # `fact 3 = 6`: were the lemma's `fact` the statement's, reflexivity would prove it
    false = problem(statement="Theorem thm : forall n : nat, fact n = 1.")
    attack = "Lemma fact : nat -> nat. Proof. exact (fun _ => 1). Defined. reflexivity."
    assert check(attack, false).verdict is Verdict.FAIL
    used = "Lemma fact : nat -> nat. Proof. exact (fun _ => 1). Defined. intros; lia."
    assert check(used).verdict is Verdict.OK  # the lemma is still usable inside the proof


def test_comment_tricks_hide_nothing() -> None:
    answers = [
        "intros. (* . Axiom c : False. *) lia.",
        "intros. (* (* nested. *) . Qed. Theorem x : True. *) lia.",
        'intros. idtac "x"". Axiom c : False. "". y". lia.',
    ]
    assert verdicts(answers) == [Verdict.OK] * 3


def test_not_proof_sentences_are_errors_at_precheck() -> None:
    outcomes = check_all(["Check nat. lia.", "intros. (* never closed", "intros; lia.. lia."])
    assert [(o.verdict, o.stage) for o in outcomes] == [(Verdict.ERROR, Stage.PRECHECK)] * 3


def test_printed_verdict_text_is_not_a_verdict() -> None:
    fakes = [
        'intros. idtac "Closed under the global context". idtac "No object of basename x".',
        'intros. fail "Anomaly: Out of memory".',
        'idtac "Error: Syntax error". intros. lia.',
    ]
    assert verdicts(fakes) == [Verdict.FAIL, Verdict.FAIL, Verdict.OK]


@pytest.mark.parametrize("chain", CHAINS)
def test_timeout_and_recovery(chain: str) -> None:
    spin = "let x := eval cbv in (N.iter 100000000000%N (fun x => x) 0%N) in idtac."
    start = time.monotonic()
    answers = [spin + " lia.", "intros; lia."]
    outcomes = check_all(answers, timeout=2, workers=1, coq_toolchain=chain)
    assert [o.verdict for o in outcomes] == [Verdict.TIMEOUT, Verdict.OK]
    assert time.monotonic() - start < 20


@pytest.mark.parametrize("chain", CHAINS)
def test_memory_exhaustion_is_an_error(chain: str) -> None:
    # the VM allocates on the heap (an answer may not call it: the header's tactic does)
    hog = problem(HEADER + "Ltac hog := let x := eval vm_compute in (Nat.pow 2 26) in idtac.\n")
    answers = ["hog. intros; lia.", "intros; lia."]
    outcomes = check_all(answers, hog, memory_mb=1024, workers=1, coq_toolchain=chain)
    assert outcomes[0].verdict is Verdict.ERROR, outcomes[0]
    assert "memory" in outcomes[0].message.lower()
    assert outcomes[1].verdict is Verdict.OK


@pytest.mark.parametrize("chain", CHAINS)
def test_unusable_statement_and_header_are_errors_at_precheck(chain: str) -> None:
    """8.20 reports an error inside a loaded file by the file's name, not by echoing the
    Load: both must be read as the header's error."""
    bad = problem(statement="Theorem thm : forall n, n + true = n.")
    bad_statement = check("lia.", bad, coq_toolchain=chain)
    assert (bad_statement.verdict, bad_statement.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "statement is unusable" in bad_statement.message
    bad_header = check(
        "lia.", problem(header="Require Import NoSuchLibrary.\n"), coq_toolchain=chain
    )
    assert (bad_header.verdict, bad_header.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "header does not load" in bad_header.message


def test_a_header_for_rocq_9_is_served_or_says_why_not_in_one_line() -> None:
    """NTP4VC's and some miniF2F-rocq headers name Rocq 9's libraries (From Stdlib): the
    compatibility layer serves what it knows; what it cannot serve says so first."""
    served = check("lia.", problem(header="From Stdlib Require Import Arith Lia.\n"))
    assert served.verdict is Verdict.OK, served
    out = check("lia.", problem(header="From Stdlib Require Import NoSuchRocq9Module.\n"))
    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert out.message.startswith("the header does not load (written for Rocq 9; the installed")
    assert "installed Coq is 8." in out.message
    # one that fails for its own reason (NTP4VC's binomial_heap: the guard) gets no hint
    own = "From Stdlib Require Import Arith.\nFixpoint loop (n : nat) : nat := loop n.\n"
    out = check("lia.", problem(header=own))
    assert out.message.startswith("the header does not load: "), out.message
    assert "Rocq 9" not in out.message


def test_a_statement_without_its_final_period_is_read_as_one_sentence() -> None:
    assert check("intros; lia.", problem(statement=STATEMENT.rstrip("."))).verdict is Verdict.OK


def test_header_axioms_are_allowed_new_ones_are_not() -> None:
    header = HEADER + "Axiom header_ax : forall n : nat, n + 0 = n.\n"
    outcomes = check_all(["exact header_ax.", "intros; lia."], problem(header=header))
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.OK]


def test_many_problems_and_headers_in_parallel() -> None:
    other = problem(header="Require Import ZArith Lia.\n", pid="q")
    jobs = [
        Job(Attempt(p.id, i, a, a), p, 30)
        for i in range(4)
        for p, a in [(problem(), "intros; lia."), (other, "intros; lia.")]
    ]
    got: list[tuple[str, Verdict]] = []
    CoqChecker(CheckSettings(workers=2), lambda a, o: got.append((a.problem_id, o.verdict))).run(
        jobs
    )
    assert sorted(got) == sorted([("p", Verdict.OK)] * 4 + [("q", Verdict.OK)] * 4)


def test_the_second_line_is_on_by_default_and_can_be_off_or_add_coqchk() -> None:
    for settings in [{}, {"replay": False}, {"coqchk": True}]:
        outcomes = check_all(["intros; lia.", "intros."], **settings)
        assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.FAIL], settings


@pytest.mark.parametrize("chain", CHAINS)
def test_second_line_alone_holds_what_the_first_let_through(chain: str, tmp_path: Path) -> None:
    """recheck alone, on files no judge saw: only an honest one passes."""
    limits = Limits(chain=resolve(chain))

    def second(text: str) -> str | None:
        return recheck(tmp_path, HEADER, STATEMENT, text, limits, 30, coqchk=True)

    assert second(f"{STATEMENT}\nProof. intros n. abstract lia. Qed.") is None
    forged = {
        "axiom": f"Axiom c : False.\n{STATEMENT}\nProof. destruct c. Qed.",
        "admitted": f"{STATEMENT}\nAdmitted.",
        "stand-in": "Definition thm := I.",
        "module": f"Module M.\n{STATEMENT}\nProof. intros; lia. Qed.",
        "unguarded": f"Unset Guard Checking.\n{STATEMENT}\nProof. intros; lia. Qed.",
        "frame printed": f'{STATEMENT}\nProof. idtac "proofeval-reply:0:6f6b". admit. Qed.',
    }
    for name, text in forged.items():
        assert second(text) is not None, name


# --- each later layer on its own: the policy is not consulted ---------------------------


def open_session(header: str, chain: str) -> CoqSession:
    workdir = Path(tempfile.mkdtemp(prefix="proofeval-coq-test-"))
    (workdir / "h.v").write_text(header)
    (workdir / "s.v").write_text(STATEMENT + "\n")
    coq = CoqSession(workdir, Limits(chain=resolve(chain)))
    assert coq.load_file(workdir / "h.v") == ""
    coq.snapshot()
    assert coq.statement("thm", workdir / "s.v") == ""
    return coq


@pytest.fixture(params=CHAINS)
def session(request: pytest.FixtureRequest) -> Iterator[CoqSession]:
    coq = open_session(HEADER + "Axiom hdr : True.\n", request.param)
    yield coq
    coq.close()
    shutil.rmtree(coq.workdir, ignore_errors=True)


@pytest.fixture
def unjudged(session: CoqSession) -> CoqSession:
    """The session with the plugin's judge off: the verdict alone stands."""
    session.run_commands(["ProofevalUnjudged."], time.monotonic() + 30)
    return session


def run(session: CoqSession, script: str) -> Outcome:
    return coq_verdict.decide(session.check(script, "thm", 30))


def judge(session: CoqSession, before: str, proof: str) -> Outcome:
    return run(session, f"{before}\n{STATEMENT}\nProof.\n{proof}\nQed.\n")


def test_verdict_alone_catches_new_axioms(unjudged: CoqSession) -> None:
    new_axiom = judge(unjudged, "Axiom cheat : False.", "destruct cheat.")
    assert new_axiom.verdict is Verdict.CHEATING
    assert "an axiom in Top.cheat" in new_axiom.message
    admitted_lemma = judge(unjudged, "Lemma aux : False. Admitted.", "destruct aux.")
    assert admitted_lemma.verdict is Verdict.CHEATING


def test_verdict_alone_catches_an_axiom_named_like_a_header_axiom(unjudged: CoqSession) -> None:
    # the answer's M.hdr prints as `hdr` once imported, like the header's own axiom
    shadow = "Module M. Axiom hdr : forall n : nat, n + 0 = n. End M. Import M."
    outcome = judge(unjudged, shadow, "exact hdr.")
    assert outcome.verdict is Verdict.CHEATING, outcome
    assert judge(unjudged, "", "pose proof hdr. intros; lia.").verdict is Verdict.OK


def test_verdict_alone_catches_an_axiom_whose_type_prints_as_anything(
    unjudged: CoqSession,
) -> None:
    looks_closed = (
        "Notation \"'Closed' 'under' 'the' 'global' 'context'\" := False.\n"
        "Axiom c : Closed under the global context."
    )
    outcome = judge(unjudged, looks_closed, "destruct c.")
    assert outcome.verdict is Verdict.CHEATING, outcome


def test_verdict_alone_catches_unsafe_flags(unjudged: CoqSession) -> None:
    unsafe = "Unset Guard Checking.\nFixpoint loop (n : nat) : nat := loop n.\nSet Guard Checking."
    outcome = judge(unjudged, unsafe, "intros; assert (loop 0 = loop 0) by reflexivity; lia.")
    assert outcome.verdict is Verdict.CHEATING
    assert "guard checking off" in outcome.message
    left_off = run(unjudged, f"Unset Guard Checking.\n{STATEMENT}\nProof. intros; lia. Qed.")
    assert left_off.verdict is Verdict.CHEATING, left_off
    uip = run(unjudged, f"Set Definitional UIP.\n{STATEMENT}\nProof. intros; lia. Qed.")
    assert uip.verdict is Verdict.CHEATING, uip


def test_verdict_alone_catches_what_is_left_open(unjudged: CoqSession) -> None:
    in_module = run(unjudged, f"Module M.\n{STATEMENT}\nProof. intros; lia. Qed.")
    assert in_module.verdict is Verdict.CHEATING, in_module
    section = run(unjudged, f"Section S.\n{STATEMENT}\nProof. intros; lia. Qed.")
    assert section.verdict is Verdict.CHEATING, section
    unfinished = run(unjudged, f"{STATEMENT}\nProof. intros.")
    assert unfinished.verdict is Verdict.FAIL, unfinished


def test_verdict_alone_resolves_the_theorem_by_kernel_name_and_type(
    unjudged: CoqSession,
) -> None:
    for stand_in in ["Definition thm : unit := tt.", "Definition thm := I.",
                     "Theorem thm : True. Proof. exact I. Qed."]:  # fmt: skip
        outcome = run(unjudged, stand_in)
        assert outcome.verdict is Verdict.FAIL, (stand_in, outcome)
    # the benchmark's statement elaborated before the answer: shadowing changes nothing
    shadowed = "Definition nat := unit.\nTheorem thm : forall n : nat, n + 0 = n. Admitted."
    assert run(unjudged, shadowed).verdict is not Verdict.OK


@pytest.mark.parametrize("chain", CHAINS)
def test_the_audit_remembers_nothing_of_an_earlier_attempt(chain: str) -> None:
    """An earlier attempt's `d`, free of primitives, says nothing of a later `d`."""
    coq = open_session(HEADER + "Require Import Uint63.\n", chain)
    try:
        coq.run_commands(["ProofevalUnjudged."], time.monotonic() + 30)
        cast = "intros; assert (d = d) by exact (@eq_refl _ d <: d = d); lia."
        plain = judge(coq, "Lemma d : nat. exact 0. Defined.", cast)
        assert plain.verdict is Verdict.OK, plain
        primitive = judge(coq, "Lemma d : int. exact 1%uint63. Defined.", cast)
        assert primitive.verdict is Verdict.ERROR, primitive
        assert "VM cast over primitive" in primitive.message
    finally:
        coq.close()
        shutil.rmtree(coq.workdir, ignore_errors=True)


def test_the_state_is_restored_after_each_attempt(unjudged: CoqSession) -> None:
    assert judge(unjudged, "Definition helper := 0.", "intros; lia.").verdict is Verdict.OK
    outcome = judge(unjudged, "", "unfold helper. intros; lia.")
    assert outcome.verdict is Verdict.FAIL
    assert run(unjudged, f"Module M.\n{STATEMENT}\nProof. intros; lia. Qed.").verdict is (
        Verdict.CHEATING
    )
    assert judge(unjudged, "", "intros; lia.").verdict is Verdict.OK  # M is closed and gone


# Commands in every place the old renderer let them through (a sentence start, after a
# goal selector, in a lemma's statement, after blanks the splitter kept): Coq's own parse
# of the file is what the judge sees, so each is refused, whatever Python's split said.
HIDDEN = {
    "before the statement": "Axiom c : False.\nTHM\nProof. destruct c. Qed.",
    "in the proof": "THM\nProof. intros. Axiom c : False. destruct c. Qed.",
    "after a selector": "THM\nProof. 1: intros. Axiom c : False. destruct c. Qed.",
    "after a comment that ends a sentence": "THM\nProof. (* x *) Axiom c : False. Qed.",
    "in a lemma's place": "Notation \"'F'\" := False.\nTHM\nProof. intros; lia. Qed.",
    "a module around the proof": "Module M.\nTHM\nProof. intros; lia. Qed.",
    "an open section": "Section S. Variable v : False.\nTHM\nProof. destruct v. Qed.",
    "fail control": "Fail Axiom c : False.\nTHM\nProof. intros; lia. Qed.",
    "redirect": 'Redirect "x" Print nat.\nTHM\nProof. intros; lia. Qed.',
    "attribute": "#[bypass_check(guard)] Fixpoint f (n : nat) : nat := f n.\nTHM\nProof. lia. Qed.",
    "admitted": "THM\nAdmitted.",
    "require": "Require Import Classical.\nTHM\nProof. intros; lia. Qed.",
    "unset guard": "Unset Guard Checking.\nTHM\nProof. intros; lia. Qed.",
    "load": 'Load "/etc/passwd".\nTHM\nProof. intros; lia. Qed.',
    "declare ml": 'Declare ML Module "x".\nTHM\nProof. intros; lia. Qed.',
    "the plugin's own switch": "ProofevalUnjudged.\nTHM\nProof. intros; lia. Qed.",
}


@pytest.mark.parametrize("script", HIDDEN.values(), ids=HIDDEN.keys())
def test_judge_alone_refuses_every_command_but_proof_sentences(
    session: CoqSession, script: str
) -> None:
    outcome = run(session, script.replace("THM", STATEMENT))
    assert outcome.verdict in (Verdict.CHEATING, Verdict.ERROR), outcome
    assert outcome.stage is Stage.PRECHECK, outcome


def test_judge_lets_honest_proofs_through(session: CoqSession) -> None:
    honest = [
        "Proof. intros n. abstract lia. Qed.",
        "Proof. intros n. transparent_abstract lia. Qed.",
        "Proof using. intros; lia. Defined.",
        "Proof. intros n. induction n. - reflexivity. - simpl. { rewrite IHn. reflexivity. } Qed.",
        "Proof. intros. all: lia. Qed.",
    ]
    for proof in honest:
        assert run(session, f"{STATEMENT}\n{proof}").verdict is Verdict.OK, proof
    lemma = f"Lemma aux (m : nat) : m + 0 = m. Proof. abstract lia. Qed.\n{STATEMENT}\n"
    assert run(session, lemma + "Proof. exact aux. Qed.").verdict is Verdict.OK


def test_given_up_goals_are_cheating_by_the_proofs_own_data(session: CoqSession) -> None:
    """The plugin alone (no screen): a finished proof that gave goals up is CHEATING, told
    from the proof's evar map (Compat.gives_up), not from Coq's message; one that is not
    finished is FAIL, given-up goals or not."""
    given_up = ["intros. admit.", "give_up.", "intros; try admit.", "intros. admit. Defined."]
    for proof in given_up:
        outcome = run(
            session, f"{STATEMENT}\nProof. {proof}{'' if 'Defined' in proof else ' Qed.'}"
        )
        assert (outcome.verdict, outcome.stage) == (Verdict.CHEATING, Stage.CHECK), (proof, outcome)
    for proof in ["intros.", "intros. induction n. admit.", "intros. shelve."]:
        outcome = run(session, f"{STATEMENT}\nProof. {proof} Qed.")
        assert outcome.verdict is Verdict.FAIL, (proof, outcome)


@pytest.mark.parametrize("chain", CHAINS)
def test_a_header_tactic_that_admits_is_cheating(chain: str) -> None:
    """The screen sees no `admit` in the answer: the plugin alone tells it."""
    sneaky = problem(HEADER + "Ltac finish := admit.\n")
    outcome = check("intros. finish.", sneaky, coq_toolchain=chain)
    assert (outcome.verdict, outcome.stage) == (Verdict.CHEATING, Stage.CHECK), outcome


def test_jobs_are_checked_as_they_come() -> None:
    """The second job is produced only once the first has its verdict."""
    first_done = threading.Event()
    got: list[Verdict] = []

    def results(_attempt: Attempt, outcome: Outcome) -> None:
        got.append(outcome.verdict)
        first_done.set()

    def jobs() -> Iterator[Job]:
        yield Job(Attempt("p", 0, "intros; lia.", "intros; lia."), problem(), 30)
        assert first_done.wait(60)
        yield Job(Attempt("p", 1, "intros.", "intros."), problem(), 30)

    CoqChecker(CheckSettings(workers=2), results).run(jobs())
    assert got == [Verdict.OK, Verdict.FAIL]


def test_the_shared_interface_drives_it() -> None:
    """provers/interface.py's Job and CheckSettings work as they are, with `problems`."""
    from proofeval.provers import interface

    prob = problem()
    jobs = [interface.Job(Attempt("p", 0, "intros; lia.", "intros; lia."), prob, 30)]
    got: list[Verdict] = []
    settings = interface.CheckSettings(workers=1)
    CoqChecker(settings, lambda _a, o: got.append(o.verdict)).run(jobs, [prob])  # type: ignore[arg-type]
    assert got == [Verdict.OK]
