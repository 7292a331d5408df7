"""Coq proof states: goals after each sentence, branching, finish by the ordinary checker
(stored as an attempt), feedback, and the attacks: the answer policy on every step,
limits, budgets, and no reach into another session's states. Real coqtop."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from proofeval.api import Checker, problem
from proofeval.errors import CheckerError
from proofeval.model import Stage, Verdict
from proofeval.provers.coq.states import CoqStates
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import StepLimits
from proofeval.scale.sessions import States
from proofeval.states import Budget, BudgetExceeded, State, StepError, UnknownState
from proofeval.states.search import Found
from proofeval.store import RunStore

pytestmark = pytest.mark.coq

HEADER = "Require Import Arith Lia NArith."
STATEMENT = "Theorem both : forall n : nat, n + 0 = n /\\ 0 + n = n."
SPIN = "let x := eval cbv in (N.iter 100000000000%N (fun x => x) 0%N) in idtac."


@pytest.fixture(scope="module")
def states():
    with Checker(CheckSettings(workers=1)) as checker, States(checker) as opened:
        yield opened


@pytest.fixture
def p():
    return problem("coq", STATEMENT, header=HEADER)


def applied(result: State | StepError) -> State:
    assert isinstance(result, State), result
    return result


def test_goals_branching_and_finish(states: States, p, tmp_path) -> None:
    store = RunStore(tmp_path)
    with states.session(Budget(steps=50), store=store) as session:
        root = session.start(p)
        assert "forall n : nat, n + 0 = n /\\ 0 + n = n" in root.goals[0]
        split = applied(session.apply(root, "intros n. split."))
        assert len(split.goals) == 2 and "n + 0 = n" in split.goals[0]
        assert "0 + n = n" in split.goals[1]
        # branching: two tactics on one state, which stays as it was
        left = applied(session.apply(split, "- lia."))
        other = applied(session.apply(split, "all: lia."))
        assert other.solved and not left.solved
        done = applied(session.apply(left, "- lia."))
        assert done.solved and done.goals == ()
        finished = session.finish(done)
        assert finished.outcome.verdict is Verdict.OK, finished.outcome
        assert finished.proof == "intros n. split.\n- lia.\n- lia."
        assert session.finish(other).outcome.verdict is Verdict.OK
    [first, second] = store.results()
    assert (first.verdict, second.verdict) == (Verdict.OK, Verdict.OK)
    assert first.problem_id == p.id and {first.attempt, second.attempt} == {0, 1}


def test_an_error_leaves_the_state_and_a_fail_carries_goals(states: States, p) -> None:
    with states.session() as session:
        root = session.start(p)
        failed = session.apply(root, "intros n. reflexivity.")
        assert isinstance(failed, StepError) and failed.state == root
        assert failed.outcome.verdict is Verdict.FAIL
        assert "Unable to unify" in failed.outcome.message or "Error" in failed.outcome.message
        half = applied(session.apply(root, "intros n. split."))
        finished = session.finish(half)
        assert finished.outcome.verdict is Verdict.FAIL
        assert finished.feedback is not None and len(finished.feedback.goals) == 2
        assert "n + 0 = n" in finished.feedback.goals[0]


@pytest.mark.parametrize(
    ("tactic", "verdict"),
    [
        ("admit.", Verdict.CHEATING),
        ("Admitted.", Verdict.CHEATING),
        ("Drop.", Verdict.CHEATING),
        ('Redirect "/tmp/x" Print nat.', Verdict.CHEATING),
        ("Require Import Coq.Lists.List.", Verdict.CHEATING),
        ("Qed.", Verdict.ERROR),
        ("Lemma l : True. Proof. exact I. Qed. intros.", Verdict.ERROR),
        ("intros n. exact I. Abort.", Verdict.CHEATING),
        ("#[bypass_check(guard)] intros.", Verdict.CHEATING),
        ("Definition x := 1.", Verdict.ERROR),
    ],
)
def test_every_step_meets_the_answer_policy(states: States, p, tactic: str, verdict) -> None:
    with states.session() as session:
        root = session.start(p)
        refused = session.apply(root, tactic)
        assert isinstance(refused, StepError), tactic
        assert (refused.outcome.verdict, refused.outcome.stage) == (verdict, Stage.PRECHECK)
        assert applied(session.apply(root, "intros n. split.")).goals  # still usable


def test_a_step_has_its_own_wall_clock(states: States, p) -> None:
    with states.session(Budget(step_timeout=2.0)) as session:
        root = session.start(p)
        timed_out = session.apply(root, SPIN)
        assert isinstance(timed_out, StepError)
        assert timed_out.outcome.verdict is Verdict.TIMEOUT
        # coqtop was killed; the state still works in a new one
        assert applied(session.apply(root, "intros n. split.")).goals


def test_budgets_are_enforced(states: States, p) -> None:
    with states.session(Budget(steps=2, live=3)) as session:
        root = session.start(p)
        one = applied(session.apply(root, "intros n."))
        applied(session.apply(one, "split."))
        with pytest.raises(BudgetExceeded, match="2 steps"):
            session.apply(one, "split.")
    with states.session(Budget(live=2)) as session:
        root = session.start(p)
        one = applied(session.apply(root, "intros n."))
        with pytest.raises(BudgetExceeded, match="holds 2 states"):
            session.apply(one, "split.")
        session.release(one)
        applied(session.apply(root, "intros n."))
    with states.session(Budget(seconds=1.0, step_timeout=5.0)) as session:
        root = session.start(p)
        assert session.apply(root, SPIN).outcome.verdict is Verdict.TIMEOUT  # 1 s, not 5
        with pytest.raises(BudgetExceeded, match="seconds"):
            session.apply(root, "intros n.")


def coqtops() -> list[int]:
    """The coqtop processes running beneath this test process."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                head, _, rest = (entry / "stat").read_text().rpartition(")")
            except OSError:
                continue
            names[int(entry.name)] = head.partition("(")[2]
            parents[int(entry.name)] = int(rest.split()[1])

    def mine(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, name in names.items() if name.startswith("coqtop") and mine(pid)]


def test_the_seconds_budget_counts_cpu_not_waiting(states: States, p) -> None:
    """A step that waits (coqtop stopped for 1.5 s, as on a busy machine) is charged
    coqtop's CPU time, not the wall clock."""
    with states.session() as session:
        root = session.start(p)
        stopped = coqtops()
        assert stopped
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        resume = threading.Timer(1.5, lambda: [os.kill(pid, signal.SIGCONT) for pid in stopped])
        resume.start()
        started = time.monotonic()
        applied(session.apply(root, "intros n. split."))
        resume.join()
        assert time.monotonic() - started >= 1.5
        # the wall clock would charge >= 1.5 s; CPU is counted in 10 ms ticks, so a step
        # this small may be charged 0
        assert 0.0 <= session.usage.seconds < 1.0


def test_a_session_cannot_reach_another_sessions_states(states: States, p) -> None:
    with states.session() as a, states.session() as b:
        mine = a.start(p)
        b.start(p)
        with pytest.raises(UnknownState):
            b.apply(mine.id, "intros n.")
        with pytest.raises(UnknownState):
            b.finish(mine.id)
        with pytest.raises(UnknownState):
            b.release(mine.id)
        a.release(mine)
        with pytest.raises(UnknownState):
            a.apply(mine.id, "intros n.")


def test_search_is_bounded_and_one_sentence(states: States, p) -> None:
    with states.session() as session:
        found = session.search(p, "(_ + 0 = _)", limit=3)
        assert isinstance(found, list) and 1 <= len(found) <= 3
        assert any("add_0_r" in f for f in found)
        escaped = session.search(p, "nat. Drop")
        assert isinstance(escaped, StepError)
        assert escaped.outcome.stage is Stage.PRECHECK


def test_search_theorems_gives_names_and_statements(states: States, p) -> None:
    with states.session(Budget(steps=3)) as session:
        found = session.search_theorems(p, "(_ + 0)", limit=1)
        assert isinstance(found, Found) and len(found.theorems) == 1 and found.more
        everything = session.search_theorems(p, "(_ + 0)", limit=200)
        assert isinstance(everything, Found) and not everything.more
        add_0_r = {t.name: t.statement for t in everything.theorems}["Nat.add_0_r"]
        assert add_0_r == "forall n : nat, n + 0 = n"
        assert found.as_json()["theorems"][0].keys() == {"name", "statement"}
        refused = session.search_theorems(p, "nat. Drop")
        assert isinstance(refused, StepError) and refused.outcome.stage is Stage.PRECHECK
        with pytest.raises(BudgetExceeded):  # a search is a step
            session.search_theorems(p, "(_ + 0)")


def test_the_prover_level_states_know_only_their_own_handles(p) -> None:
    states = CoqStates(p, CheckSettings())
    try:
        states.start("root")
        with pytest.raises(KeyError):
            states.apply("someone-else", "x", "intros n.", StepLimits(10, 2048))
    finally:
        states.close()


def test_a_statement_that_is_not_a_theorem_is_refused() -> None:
    with pytest.raises(CheckerError, match="Theorem"):
        CoqStates(problem("coq", "Definition x := 1."), CheckSettings())


def test_diagnose_names_the_failing_sentence_and_its_goals(states: States, p) -> None:
    with states.session() as session:
        feedback = session.diagnose(p, "Proof. intros n. split. - lia. - exact I. Qed.")
        assert (feedback.step, feedback.tactic) == (5, "exact I.")  # bullets are steps
        assert "0 + n = n" in feedback.goals[-1] and "Error" in feedback.message
        left = session.diagnose(p, "intros n. split. - lia.")
        assert left.step is None and left.message == "goals are left"
        assert session.usage.live == 0  # diagnose holds no state afterwards


def test_the_store_keeps_a_fails_feedback(states: States, p, tmp_path) -> None:
    store = RunStore(tmp_path)
    with states.session(store=store) as session:
        half = applied(session.apply(session.start(p), "intros n. split."))
        assert session.finish(half).outcome.verdict is Verdict.FAIL
    [attempt] = store.attempts()
    kept = store.feedback(attempt)
    assert kept is not None and len(kept["goals"]) == 2 and kept["failed_step"] is None
