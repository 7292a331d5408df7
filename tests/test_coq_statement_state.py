"""A client's statement (from the API, the service, MCP: untrusted) is elaborated in the
warm coqtop that serves every problem of its header (ProofevalStatement, check.mlg).
Whatever its elaboration does to Coq's state must be undone before the next problem or
attempt, and it must end within its limit without stopping that coqtop. Attacks, on
every Coq toolchain: a tactic in the statement that declares a constant (abstract,
transparent_abstract, `using` a later problem's name), sets an option, creates evars,
or commands written after the statement; statements that never finish elaborating."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq import verdict as coq_verdict
from proofeval.provers.coq.session import CoqSession, Limits
from proofeval.provers.coq.toolchain import resolve
from proofeval.provers.interface import CheckSettings, Job
from tests.coq_chains import CHAINS

if shutil.which("coqtop") is None:
    pytest.skip("Coq is not installed (make install)", allow_module_level=True)

pytestmark = pytest.mark.coq

HEADER = "Require Import Arith Lia NArith.\n"
THM = "Theorem thm : forall n : nat, n + 0 = n."

# Statements whose elaboration tries to leave something in the warm coqtop.
IN_TERM = "Theorem s : forall x : True, x = ltac:({}) -> True."
HOSTILE = {
    "abstract": IN_TERM.format("abstract exact I"),
    "abstract using a name": IN_TERM.format("abstract exact I using leaked"),
    "abstract of a later theorem's name": IN_TERM.format("abstract exact I using thm"),
    "transparent_abstract": IN_TERM.format("transparent_abstract exact I using leaked2"),
    "a tactic sets an option": "Theorem s : ltac:(start ltac profiling; exact True).",
    "assert by, a print, a let": (
        'Theorem s : ltac:(assert (h : True) by exact I; idtac "x"; '
        "let x := constr:(I) in exact True)."
    ),
    "an evar left": "Theorem s : ltac:(let x := open_constr:(_ : Prop) in exact x).",
    "commands after the statement": (
        "Theorem s : True. Axiom leak : False. Open Scope Z_scope. Unset Guard Checking. "
        "Set Ltac Profiling."
    ),
}

# Statements that never finish elaborating (NArith is in the header).
ENDLESS = {
    "a tactic that loops": "Theorem s : ltac:(let rec f := idtac; f in f).",
    "a huge computation": (
        "Theorem s : ltac:(let x := eval cbv in (N.iter 100000000000%N (fun x => x) 0%N) "
        "in exact True)."
    ),
    "timeouts inside it": (
        "Theorem s : ltac:(let rec g := try (timeout 1 (let rec f := idtac; f in f)); g in g)."
    ),
}

# What the warm coqtop holds, as Coq prints it: the current module's objects, the
# options, the open scopes, the universes. Read by the test only, as a probe.
PROBE = ["Print All.", "Print Options.", "Print Visibility.", "Print Universes."]


def open_session(chain: str) -> CoqSession:
    workdir = Path(tempfile.mkdtemp(prefix="proofeval-coq-statement-"))
    (workdir / "h.v").write_text(HEADER)
    coq = CoqSession(workdir, Limits(chain=resolve(chain)))
    assert coq.load_file(workdir / "h.v") == ""
    coq.snapshot()
    return coq


@pytest.fixture(params=CHAINS)
def session(request: pytest.FixtureRequest) -> Iterator[CoqSession]:
    coq = open_session(request.param)
    yield coq
    coq.close()
    shutil.rmtree(coq.workdir, ignore_errors=True)


def elaborate(coq: CoqSession, statement: str, key: str, limit: float | None = None) -> str:
    path = coq.workdir / f"s_{key}.v"
    path.write_text(statement + "\n")
    return coq.statement(key, path) if limit is None else coq.statement(key, path, limit)


def state(coq: CoqSession) -> str:
    out, _err = coq.run_commands(PROBE, time.monotonic() + 60)
    return out


def check(coq: CoqSession, key: str, text: str) -> Outcome:
    return coq_verdict.decide(coq.check(text, key, 30))


def test_a_statement_leaves_nothing_behind(session: CoqSession) -> None:
    assert elaborate(session, THM, "thm") == ""
    last = state(session)
    assert state(session) == last  # the probe itself changes nothing
    changed = []
    for i, (name, statement) in enumerate(HOSTILE.items()):
        elaborate(session, statement, f"h{i}")  # elaborated or refused: either may be right
        now = state(session)
        if now != last:
            changed.append(name)
        last = now
    assert changed == []
    # the benchmark's theorem is still free to be proved, and nothing leaked is usable
    assert check(session, "thm", f"{THM}\nProof. intros; lia. Qed.").verdict is Verdict.OK
    for name in ["leaked", "leaked2", "ltac_gen_subproof", "leak"]:
        used = check(session, "thm", f"{THM}\nProof. pose proof {name}. intros; lia. Qed.")
        assert used.verdict is Verdict.FAIL, (name, used)


def test_a_statement_is_one_command(session: CoqSession) -> None:
    """What follows a statement is never run, and the statement is refused rather than its
    every answer judged CHEATING for commands the answer did not write."""
    for i, statement in enumerate([HOSTILE["commands after the statement"], f"{THM}\n{THM}"]):
        assert elaborate(session, statement, f"two{i}").startswith("not one statement"), i
    assert elaborate(session, f"{THM} (* a comment. *)", "thm") == ""


def test_a_statement_that_does_not_end_is_stopped_and_the_coqtop_serves_on(
    session: CoqSession,
) -> None:
    pid = session.pid
    for i, (name, statement) in enumerate(ENDLESS.items()):
        start = time.monotonic()
        why = elaborate(session, statement, f"e{i}", limit=3)
        took = time.monotonic() - start
        assert "did not elaborate within 3 s" in why, (name, why)
        assert took < 15, (name, took)
        assert session.alive and session.pid == pid, name
    assert elaborate(session, THM, "thm") == ""
    assert check(session, "thm", f"{THM}\nProof. intros; lia. Qed.").verdict is Verdict.OK


def problem(statement: str, pid: str) -> Problem:
    return Problem(id=pid, statement=statement, prover="coq", header=HEADER)


def run_in_order(
    pairs: list[tuple[Problem, str]], chain: str, **settings
) -> tuple[list[Outcome], int]:
    """Check each (problem, answer) in order on one worker, so every problem of the header
    shares one coqtop; the outcomes, and how many coqtops were started."""
    got: dict[int, Outcome] = {}
    events: list[str] = []
    jobs = [Job(Attempt(p.id, i, a, a), p, 30) for i, (p, a) in enumerate(pairs)]
    settings = CheckSettings(workers=1, coq_toolchain=chain, **settings)
    CoqChecker(settings, lambda a, o: got.__setitem__(a.index, o), events.append).run(jobs)
    started = sum(event.startswith("starting coqtop") for event in events)
    return [got[i] for i in range(len(pairs))], started


@pytest.mark.parametrize("chain", CHAINS)
def test_another_problem_sees_nothing_of_a_hostile_statement(chain: str) -> None:
    """End to end: hostile statements first, then other problems of the same header."""
    pairs = [(problem(text, f"h{i}"), "exact I.") for i, text in enumerate(HOSTILE.values())]
    victims = [
        (problem(THM, "thm"), "intros; lia."),  # `thm` was declared by a statement's abstract
        (problem("Theorem t1 : True.", "t1"), "exact leaked."),
        (problem("Theorem t2 : True.", "t2"), "exact ltac_gen_subproof."),
        (problem("Theorem t3 : False.", "t3"), "destruct leak."),
        (problem("Theorem t4 : (2 * 3 = 6)%nat.", "t4"), "reflexivity."),
    ]
    outcomes, started = run_in_order(pairs + victims, chain)
    got = [o.verdict for o in outcomes[len(pairs) :]]
    assert got == [Verdict.OK, Verdict.FAIL, Verdict.FAIL, Verdict.FAIL, Verdict.OK], outcomes
    assert started == 1


@pytest.mark.parametrize("chain", CHAINS)
def test_a_statement_that_does_not_end_is_an_error_and_the_next_problem_is_served(
    chain: str,
) -> None:
    start = time.monotonic()
    endless = problem(ENDLESS["a huge computation"], "endless")
    outcomes, started = run_in_order([(endless, "exact I."), (problem(THM, "thm"), "lia.")], chain)
    assert (outcomes[0].verdict, outcomes[0].stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "did not elaborate within" in outcomes[0].message, outcomes[0]
    assert outcomes[1].verdict is Verdict.OK, outcomes[1]
    assert started == 1  # the same coqtop served the next problem
    assert time.monotonic() - start < 90


@pytest.mark.parametrize("chain", CHAINS)
def test_a_statement_that_exhausts_memory_is_an_error_and_the_next_problem_is_served(
    chain: str,
) -> None:
    """The VM allocates on the heap; a coqtop whose heap grew to its limit is not kept (it
    would fail the next attempts), a fresh one serves the next problem."""
    hog = "Theorem s : ltac:(let x := eval vm_compute in (Nat.pow 2 26) in exact True)."
    pairs = [(problem(hog, "hog"), "exact I."), (problem(THM, "thm"), "intros; lia.")]
    outcomes, started = run_in_order(pairs, chain, memory_mb=1024)
    assert (outcomes[0].verdict, outcomes[0].stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "resources exhausted" in outcomes[0].message, outcomes[0]
    assert outcomes[1].verdict is Verdict.OK, outcomes[1]
    assert started == 2
