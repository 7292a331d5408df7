"""The worker pool: contexts loaded once, attempts spread over workers, nothing lost."""

from __future__ import annotations

import time

import pytest

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.provers.hol_light.pool import HolLightChecker
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings, Job
from tests.conftest import on_both_paths

pytestmark = pytest.mark.hol

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

DEFS = "let DOUBLE = new_definition `DOUBLE n = n + n`;;\n"


def run(base: WarmProcess, jobs: list[Job], workers: int = 2) -> dict[tuple[str, int], Outcome]:
    results: dict[tuple[str, int], Outcome] = {}

    def record(attempt: Attempt, outcome: Outcome) -> None:
        assert (attempt.problem_id, attempt.index) not in results
        results[(attempt.problem_id, attempt.index)] = outcome

    HolLightChecker(CheckSettings(workers=workers), record, base=base).run(jobs)
    return results


def job(problem: Problem, index: int, proof: str, timeout: float = 20.0) -> Job:
    return Job(Attempt(problem.id, index, proof, proof), problem, timeout)


def test_attempts_in_several_contexts_each_get_one_verdict(hol_base: WarmProcess) -> None:
    core = Problem(id="core.add", statement="`!n. n + 0 = n`")
    defs = Problem(id="defs.double", statement="`!n. DOUBLE n = 2 * n`", header=DEFS)
    jobs = [job(core, i, "ARITH_TAC") for i in range(6)]
    jobs += [job(defs, i, "REWRITE_TAC[DOUBLE] THEN ARITH_TAC") for i in range(5)]
    jobs += [job(defs, 5, "ARITH_TAC")]
    results = run(hol_base, jobs)
    assert len(results) == 12
    assert [results[("defs.double", 5)].verdict] == [Verdict.FAIL]
    assert sum(o.verdict == Verdict.OK for o in results.values()) == 11


def test_the_sandboxs_first_process_checks_and_serves_on(hol_base: WarmProcess) -> None:
    """The first process reaps the clones its double fork orphans, yet waits for its own
    attempts: when it ignored SIGCHLD instead, reaping its attempt failed (ECHILD) and it
    died before its next reply."""
    assert hol_base.add_goal("first", "`!n. n + 0 = n`") is None
    tactic = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"
    for answer, expected in [(tactic, Verdict.OK), ("ALL_TAC", Verdict.FAIL), (tactic, Verdict.OK)]:
        assert hol_base.check("first", answer, 60.0, 4096).verdict == expected
    hol_base.clone().close()
    assert hol_base.eval_string('"serving"') == "serving"


def test_a_context_that_fails_to_load_makes_its_attempts_errors(hol_base: WarmProcess) -> None:
    broken = Problem(id="broken", statement="`T`", header="let x = NO_SUCH_THING;;\n")
    fine = Problem(id="fine", statement="`T`")
    results = run(hol_base, [job(broken, 0, "ACCEPT_TAC TRUTH"), job(fine, 0, "ACCEPT_TAC TRUTH")])
    assert results[("broken", 0)].verdict == Verdict.ERROR
    assert results[("broken", 0)].stage == Stage.PRECHECK
    assert "context failed to load" in results[("broken", 0)].message
    assert results[("fine", 0)].verdict == Verdict.OK


def test_an_unusable_statement_is_an_error_for_its_attempts(hol_base: WarmProcess) -> None:
    bad = Problem(id="bad", statement="`!x. x +`")
    results = run(hol_base, [job(bad, 0, "ARITH_TAC")], workers=1)
    out = results[("bad", 0)]
    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "statement" in out.message


def test_a_timeout_does_not_hold_up_the_other_worker(hol_base: WarmProcess) -> None:
    p = Problem(id="p", statement="`!n. n + 0 = n`")
    spin = "(let rec spin (g : goal) : goalstate = spin g in spin)"
    jobs = [job(p, 0, spin, timeout=3.0)] + [job(p, i, "ARITH_TAC") for i in range(1, 9)]
    results = run(hol_base, jobs)
    assert results[("p", 0)].verdict == Verdict.TIMEOUT
    assert all(results[("p", i)].verdict == Verdict.OK for i in range(1, 9))


def test_a_chain_of_contexts_loads_each_prefix_once(hol_base: WarmProcess) -> None:
    base = "let DOUBLE = new_definition `DOUBLE n = n + n`;;\n"
    lemma = "let DOUBLE_0 = prove(`DOUBLE 0 = 0`, CHEAT_TAC);;\n"
    p1 = Problem(id="chain.1", statement="`DOUBLE 0 = 0`", header=base)
    p2 = Problem(id="chain.2", statement="`DOUBLE 0 + 0 = 0`", header=base + lemma)
    other = Problem(id="chain.3", statement="`DOUBLE 1 = 2`", header=base + "let X = 1;;\n")
    events: list[str] = []
    results: dict[str, Outcome] = {}
    checker = HolLightChecker(
        CheckSettings(workers=2),
        lambda a, o: results.__setitem__(a.problem_id, o),
        events.append,
        base=hol_base,
    )
    checker.run(
        [
            job(p1, 0, "REWRITE_TAC[DOUBLE] THEN ARITH_TAC"),
            job(p2, 0, "REWRITE_TAC[DOUBLE_0; ADD_CLAUSES]"),
            job(other, 0, "REWRITE_TAC[DOUBLE] THEN ARITH_TAC"),
        ]
    )
    assert {pid: o.verdict for pid, o in results.items()} == {
        "chain.1": Verdict.OK,
        "chain.2": Verdict.OK,
        "chain.3": Verdict.OK,
    }
    loads = [e for e in events if e.startswith("loading the context")]
    assert len(loads) == 3, loads  # the definition once, then the lemma and X on top of it


def test_attempts_may_arrive_while_checking(hol_base: WarmProcess) -> None:
    p = Problem(id="stream", statement="`!n. n + 0 = n`")
    results: list[Outcome] = []

    def slowly():
        for i in range(4):
            time.sleep(0.3)
            yield job(p, i, "ARITH_TAC")

    checker = HolLightChecker(
        CheckSettings(workers=2), lambda a, o: results.append(o), base=hol_base
    )
    checker.run(slowly(), problems=[p])
    assert [o.verdict for o in results] == [Verdict.OK] * 4


def test_a_checker_that_starts_its_own_hol_light_outlives_its_workers() -> None:
    """bwrap dies with the thread that started it: the base must not be started by a
    worker that finishes early while another still checks (this starts HOL Light)."""
    quick = Problem(id="quick", statement="`T`")
    slow = Problem(id="slow", statement="`T`", header='ignore (Sys.command "sleep 3");;\n')
    jobs = [job(quick, 0, "ACCEPT_TAC TRUTH")] + [
        job(slow, i, "ACCEPT_TAC TRUTH") for i in range(4)
    ]
    results: list[Outcome] = []
    HolLightChecker(CheckSettings(workers=2), lambda a, o: results.append(o)).run(jobs)
    assert [o.verdict for o in results] == [Verdict.OK] * 5, results
