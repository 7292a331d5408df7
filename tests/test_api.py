"""proofeval.Checker: the same verdicts as `proofeval check`, warm contexts kept across
calls, failures as ERROR verdicts, eviction, asyncio. Real HOL Light (the session's core)
and real Coq."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path

import pytest

import proofeval
from proofeval.api import Checker, problem
from proofeval.checking.engine import TICK, context_key
from proofeval.checking.memory import descendants_mb
from proofeval.errors import InputError
from proofeval.model import Problem, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

pytestmark = pytest.mark.coq

COQ_HEADER = "Require Import Arith Lia NArith."
HOL_HEADER = "let DOUBLE = new_definition `DOUBLE n = n + n`;;\n"
HOL_SPIN = "(let rec spin (g : goal) : goalstate = spin g in spin)"
COQ_SPIN = "let x := eval cbv in (N.iter 100000000000%N (fun x => x) 0%N) in idtac. lia."

PROBLEMS = [
    {"id": "hol.add_0", "prover": "hol-light", "statement": "`!n. n + 0 = n`"},
    {"id": "hol.double", "prover": "hol-light", "header": HOL_HEADER,
     "statement": "`!n. DOUBLE n = 2 * n`"},
    {"id": "hol.spin", "prover": "hol-light", "statement": "`!n. n + 0 = n`", "timeout": 3},
    {"id": "hol.broken", "prover": "hol-light", "header": "let x = NO_SUCH_THING;;\n",
     "statement": "`T`"},
    {"id": "coq.add_0", "prover": "coq", "header": COQ_HEADER,
     "statement": "Theorem add_0 : forall n : nat, n + 0 = n."},
    {"id": "coq.spin", "prover": "coq", "header": COQ_HEADER, "timeout": 3,
     "statement": "Theorem spin : forall n : nat, n + 0 = n."},
    {"id": "coq.broken", "prover": "coq", "header": "Require Import NoSuchLibrary.",
     "statement": "Theorem t : True."},
]  # fmt: skip
ANSWERS = [
    ("hol.add_0", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]", "OK"),
    ("hol.add_0", "REWRITE_TAC[]", "FAIL"),
    ("hol.add_0", "CHEAT_TAC", "CHEATING"),
    ("hol.add_0", 'Sys.command "true"', "CHEATING"),
    ("hol.double", "REWRITE_TAC[DOUBLE] THEN ARITH_TAC", "OK"),
    ("hol.spin", HOL_SPIN, "TIMEOUT"),
    ("hol.broken", "ACCEPT_TAC TRUTH", "ERROR"),
    ("coq.add_0", "intros. lia.", "OK"),
    ("coq.add_0", "Admitted.", "CHEATING"),
    ("coq.add_0", "intros. reflexivity.", "FAIL"),
    ("coq.spin", COQ_SPIN, "TIMEOUT"),
    ("coq.broken", "exact I.", "ERROR"),
]


def items_of(rows: list[dict], answers: list[tuple[str, str, str]]) -> list[tuple[Problem, str]]:
    by_id = {r["id"]: r for r in rows}
    made = {
        pid: problem(r["prover"], r["statement"], r.get("header", ""), r.get("timeout"))
        for pid, r in by_id.items()
    }
    return [(made[pid], proof) for pid, proof, _ in answers]


def scratch_named(message: str) -> str:
    """A message with the name of HOL Light's scratch copy of a context, which differs
    from one load to the next, left out."""
    return re.sub(r"/\S+/context-\d+\.ml", "CONTEXT", message)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def checker(hol_base: WarmProcess):
    with Checker(CheckSettings(workers=2), warm={"hol-light": hol_base}) as c:
        yield c


def test_verdicts_stages_and_messages_equal_proofeval_check(
    checker: Checker, hol_base: WarmProcess, tmp_path: Path
) -> None:
    answers = [{"problem_id": p, "answer": a} for p, a, _ in ANSWERS]
    opts = CheckOptions(
        problems=write_jsonl(tmp_path / "problems.jsonl", PROBLEMS),
        answers=write_jsonl(tmp_path / "answers.jsonl", answers),
        out=tmp_path / "run",
        settings=CheckSettings(workers=2),
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    by_attempt = {(r.problem_id, r.attempt): r for r in rows}
    seen: dict[str, int] = {}
    expected = []
    for pid, _, _ in ANSWERS:
        row = by_attempt[(pid, seen.setdefault(pid, 0))]
        seen[pid] += 1
        expected.append((row.verdict, row.stage, scratch_named(row.message)))

    outcomes = checker.check(items_of(PROBLEMS, ANSWERS))
    assert [(o.verdict, o.stage, scratch_named(o.message)) for o in outcomes] == expected
    assert [o.verdict.value for o in outcomes] == [v for _, _, v in ANSWERS]
    assert "context failed to load" in outcomes[6].message
    assert "does not load" in outcomes[-1].message


def test_contexts_stay_warm_and_take_new_statements_across_calls(checker: Checker) -> None:
    header = "let TRIPLE = new_definition `TRIPLE n = n + n + n`;;\n"
    first = problem("hol-light", "`!n. TRIPLE n = 3 * n`", header)
    second = problem("hol-light", "`!n. TRIPLE 0 + n = n`", header)
    assert [o.verdict for o in checker.check([(first, "REWRITE_TAC[TRIPLE] THEN ARITH_TAC")])] == [
        Verdict.OK
    ]
    contexts = checker.stats().contexts
    outcomes = checker.check(
        [(second, "REWRITE_TAC[TRIPLE] THEN ARITH_TAC"), (first, "REWRITE_TAC[]")]
    )
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.FAIL]
    assert checker.stats().contexts == contexts  # the header was not loaded again


def test_problems_are_told_apart_by_their_text_not_their_id(checker: Checker) -> None:
    """A caller's ids cannot make an attempt be checked against another statement."""
    easy = Problem(id="same", statement="`T`")
    hard = Problem(id="same", statement="`!n. n + 1 = 1 + n + 0 + 0 + n`")
    outcomes = checker.check([(easy, "ACCEPT_TAC TRUTH"), (hard, "ACCEPT_TAC TRUTH")])
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.FAIL]


def test_per_call_timeout_applies_where_the_problem_names_none(checker: Checker) -> None:
    p = problem("hol-light", "`!n. n + 0 = n`")
    start = time.monotonic()
    [out] = checker.check([(p, HOL_SPIN)], timeout=2.0)
    assert out.verdict == Verdict.TIMEOUT
    assert time.monotonic() - start < 30


def test_a_prover_without_a_checker_is_that_item_s_error_not_the_batch_s(
    checker: Checker,
) -> None:
    lean = problem("lean4", "theorem t : True")
    misspelt = problem("hol_light", "`T`")
    fine = problem("hol-light", "`T`")
    items = [(fine, "ACCEPT_TAC TRUTH"), (lean, "trivial"), (misspelt, "ACCEPT_TAC TRUTH")]
    outcomes = checker.check(items)
    assert [o.verdict for o in outcomes] == [Verdict.OK, Verdict.ERROR, Verdict.ERROR]
    assert "no checker for prover 'lean4'" in outcomes[1].message
    assert "did you mean hol-light?" in outcomes[2].message
    assert checker.stats().queued == 0
    with pytest.raises(InputError, match="pair"):
        checker.submit(["ACCEPT_TAC TRUTH"])  # type: ignore[list-item]


def test_asyncio_form_and_cancelling_drops_attempts_not_started(hol_base: WarmProcess) -> None:
    p = problem("hol-light", "`!n. n + 0 = n`")

    async def scenario(c: Checker) -> None:
        got = await c.acheck([(p, "ARITH_TAC"), (p, "REWRITE_TAC[]")])
        assert [o.verdict for o in got] == [Verdict.OK, Verdict.FAIL]
        task = asyncio.ensure_future(c.acheck([(p, HOL_SPIN)] * 6, timeout=2.0))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with Checker(CheckSettings(workers=1), warm={"hol-light": hol_base}) as c:
        start = time.monotonic()
        asyncio.run(scenario(c))
        [out] = c.check([(p, "ARITH_TAC")])
        assert out.verdict == Verdict.OK
        # one spinning attempt had started; the five others never ran
        assert time.monotonic() - start < 2.0 * 4
        assert c.stats().queued == 0


def test_idle_contexts_are_closed_and_load_again_when_needed() -> None:
    p = problem("coq", "Theorem t : forall n : nat, n + 0 = n.", COQ_HEADER)
    before = set(threading.enumerate())
    with Checker(CheckSettings(workers=1), idle_seconds=0.5) as c:
        assert c.check([(p, "intros. lia.")])[0].verdict == Verdict.OK
        assert wait_for(lambda: c.stats().contexts == 0)
        assert c.check([(p, "intros. lia.")])[0].verdict == Verdict.OK
        assert wait_for(lambda: c.stats().contexts == 0, interval=0.01)
    # closing waited for the context it had just closed for being idle
    assert set(threading.enumerate()) <= before


def test_a_memory_budget_closes_the_least_recently_used_idle_context_first() -> None:
    """Contexts a, b, c used in that order, then a again: a budget a little under what
    their coqtops use closes b alone; lowered again, c; a stays warm throughout."""
    made = {
        name: problem("coq", f"Theorem {name} : 1 + 1 = 2.", f"Require Import {library}.")
        for name, library in (("a", "Arith"), ("b", "Lia"), ("c", "NArith"))
    }
    key = {context_key(p): name for name, p in made.items()}
    with Checker(CheckSettings(workers=1)) as checker:
        shares = []  # MiB each context's coqtop adds
        for name in "abca":
            before = descendants_mb()
            assert checker.check([(made[name], "reflexivity.")])[0].verdict == Verdict.OK
            shares.append(descendants_mb() - before)
        assert [key[k] for k in warm(checker)] == ["b", "c", "a"]  # least recent first
        least = min(shares[:3])
        assert least > 20, shares  # each context is a coqtop of its own
        for left in (["c", "a"], ["a"]):
            checker.max_memory_mb = descendants_mb() - least / 2  # one context too many
            assert closed_down_to(checker, len(left))
            time.sleep(3 * TICK)  # and no more than one is closed
            assert [key[k] for k in warm(checker)] == left
        checker.max_memory_mb = None
        assert checker.check([(made["b"], "reflexivity.")])[0].verdict == Verdict.OK
        assert [key[k] for k in warm(checker)] == ["a", "b"]  # b loaded again


def closed_down_to(checker: Checker, contexts: int) -> bool:
    return wait_for(lambda: checker.stats().contexts <= contexts)


def warm(checker: Checker) -> list[str]:
    """The keys of the checker's warm contexts, least recently used first."""
    return checker.engine.contexts()


def test_checker_is_importable_from_the_package() -> None:
    assert proofeval.Checker is Checker


def wait_for(condition, seconds: float = 20.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False
