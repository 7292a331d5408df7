"""A statement is a term, never code: attacks on the shared context of HOL Light through
the statements that clients send (the warm process, the Checker, the service), on the
bytecode and the native path.

Each statement below is OCaml code that would change how later goals parse or what the
kernel knows (the interface of overloaded names, the constant and type tables, flags)
or never end. Every one must be refused or bounded, leave the context exactly as it
was, and leave another problem's goal and verdict unchanged.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from proofeval.api import Checker, problem
from proofeval.client import CheckClient
from proofeval.errors import CheckerError
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.conftest import on_both_paths, with_context
from tests.test_serve import TOKEN, serving

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

# A false goal (1 + 1 = 3) made provable by ARITH_TAC if `+` came to mean something else.
FALSE_GOAL = "`1 + 1 = 3`"
TRUE_GOAL = "`!n. n + 0 = n`"

# Statements that try to be code. Each would change the context if it ran.
CODE = {
    "interface": '(overload_interface ("+", `(\\x y. x):num->num->num`); `1 + 1 = 3`)',
    "the_interface": "(the_interface := []; `T`)",
    "parse_as_infix": '(parse_as_infix ("===", (12, "right")); `T`)',
    "new_constant": '(new_constant ("proofeval_c", `:num`); `proofeval_c = 0`)',
    "new_type": '(new_type ("proofeval_ty", 0); `T`)',
    "new_definition": "(new_definition `proofeval_d = 1`; `T`)",
    "flag": "(reverse_interface_mapping := false; `T`)",
    "typing flag": "(type_invention_warning := false; `T`)",
    "loop": "(let rec spin x = spin x in spin ())",
    "quoted then code": "`T`; the_interface := []",
    "two terms": "`T` = `F`",
    "an expression": "mk_eq (`1`, `1`)",
    "no backquotes": "!n. n + 0 = n",
}

# What a statement would change, as proofeval's own (trusted) code reads it.
STATE = (
    'String.concat "," [string_of_int (length !the_interface);'
    " string_of_int (length (constants ())); string_of_int (length (types ()));"
    " string_of_int (length (infixes ())); string_of_bool !reverse_interface_mapping;"
    " string_of_bool !type_invention_warning; string_of_int (length (axioms ()))]"
)


@pytest.fixture(scope="module")
def goals(core: WarmProcess) -> WarmProcess:
    assert core.add_goal("true", TRUE_GOAL) is None
    assert core.add_goal("false", FALSE_GOAL) is None
    return core


def verdicts(proc: WarmProcess) -> tuple[Verdict, Verdict, Verdict]:
    honest = proc.check("true", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]", 30.0, 4096)
    arith = proc.check("false", "ARITH_TAC", 30.0, 4096)
    refl = proc.check("false", "REWRITE_TAC[]", 30.0, 4096)
    return honest.verdict, arith.verdict, refl.verdict


EXPECTED = (Verdict.OK, Verdict.FAIL, Verdict.FAIL)


@pytest.mark.parametrize("name", sorted(CODE))
def test_a_statement_that_is_code_is_refused_and_changes_nothing(
    goals: WarmProcess, name: str
) -> None:
    before = goals.eval_string(STATE)
    started = time.monotonic()
    why = goals.add_goal(f"attack {name}", CODE[name])
    assert why is not None and "one HOL term in backquotes" in why, why
    assert time.monotonic() - started < 5.0  # refused as text: nothing ran
    assert goals.eval_string(STATE) == before
    assert verdicts(goals) == EXPECTED
    # a later goal of the same text parses as it did before
    assert goals.add_goal("again", FALSE_GOAL) is None
    assert goals.check("again", "ARITH_TAC", 30.0, 4096).verdict == Verdict.FAIL


def test_a_term_is_parsed_by_hol_light_and_rebuilt(goals: WarmProcess) -> None:
    assert goals.add_goal("spaced", "  `!n. n + 0 = n`\n") is None
    out = goals.check("spaced", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]", 30.0, 4096)
    assert out.verdict == Verdict.OK
    for text, says in [
        ("`1 + `", "does not parse as a formula"),
        ("`x:num`", "its type is num"),
        ("`:num`", "does not parse as a formula"),
    ]:
        why = goals.add_goal("bad", text)
        assert why is not None and says in why, (text, why)


def slow_statement(n: int) -> str:
    """A term that takes HOL Light's parser long: 5.6 s for n = 1000 (bytecode)."""
    return "`" + " + ".join(["x"] * n) + " = y`"


def test_a_statement_that_parses_too_long_or_too_big_is_bounded(goals: WarmProcess) -> None:
    before = goals.eval_string(STATE)
    started = time.monotonic()
    why = goals.add_goal("slow", slow_statement(5000), (2.0, 4096))
    spent = time.monotonic() - started
    assert why is not None and "within 2s" in why, why
    assert spent < 10.0, spent
    started = time.monotonic()
    huge = "`" + "a" * 20_000_000 + " = T`"  # HOL Light's lexer explodes it: GiBs of lists
    why = goals.add_goal("huge", huge, (60.0, 1024))
    spent = time.monotonic() - started
    assert why is not None and "within" not in why, why
    assert spent < 30.0, spent
    assert goals.eval_string(STATE) == before
    assert verdicts(goals) == EXPECTED


# --- through the Checker and the service ------------------------------------------------


def test_code_statements_through_the_service_change_no_other_problem(
    hol_base: WarmProcess,
) -> None:
    settings = CheckSettings(workers=1)
    honest = {"problem": {"prover": "hol-light", "statement": TRUE_GOAL}, "proof": "ARITH_TAC"}
    false = {"problem": {"prover": "hol-light", "statement": FALSE_GOAL}, "proof": "ARITH_TAC"}
    attacks = [
        {"problem": {"prover": "hol-light", "statement": CODE[name]}, "proof": "ARITH_TAC"}
        for name in sorted(CODE)
    ]
    with serving(hol_base, settings=settings) as service, CheckClient(service.url, TOKEN) as c:
        first = c.check([honest, false])
        started = time.monotonic()
        refused = c.check(attacks)
        assert time.monotonic() - started < 60.0
        after = c.check([honest, false])
    assert [o.verdict for o in first] == [Verdict.OK, Verdict.FAIL]
    assert [o.verdict for o in after] == [Verdict.OK, Verdict.FAIL]
    for out in refused:
        assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK), out
        assert "one HOL term in backquotes" in out.message, out


def test_a_statement_through_the_checker_cannot_hang_it(hol_base: WarmProcess) -> None:
    with Checker(CheckSettings(workers=1), warm={"hol-light": hol_base}) as checker:
        started = time.monotonic()
        items = [(problem("hol-light", CODE["loop"]), "ARITH_TAC")]
        items += [(problem("hol-light", TRUE_GOAL), "ARITH_TAC")]
        spin, honest = checker.check(items)
        assert time.monotonic() - started < 60.0
    assert spin.verdict == Verdict.ERROR and "backquotes" in spin.message
    assert honest.verdict == Verdict.OK


# --- headers: code, in a context of their own -------------------------------------------


def test_a_header_cannot_read_a_host_file_the_sandbox_hides(
    hol_base: WarmProcess, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """On the native path a context is inlined and compiled outside the sandbox: a
    header's `loadt` of a host file must not bring the file's text into the context."""
    mark = f"proofeval-secret-{uuid.uuid4().hex}"
    secret = tmp_path_factory.getbasetemp().parent / f"proofeval-hidden-{uuid.uuid4().hex}.ml"
    secret.write_text(f'let proofeval_leaked = "{mark}";;\n')
    proc = hol_base.clone()
    try:
        header = f'loadt "{secret}";;\nfailwith proofeval_leaked;;\n'
        with pytest.raises(CheckerError) as failed:
            proc.load(hol_base.launcher.scratch_file("context", header), "")
    finally:
        proc.close()
        secret.unlink()
    assert mark not in str(failed.value), failed.value
    # the honest header beside it: a library file the sandbox shows loads on both paths
    honest = with_context(hol_base, 'needs "Library/iter.ml";;\n')
    try:
        assert honest.add_goal("g", "`!n. n + 0 = n`") is None
    finally:
        honest.close()


def sandbox_cpu_seconds(proc: WarmProcess) -> float:
    """CPU seconds the sandbox's processes have spent, from /proc (they are this test's
    descendants)."""
    root = proc.launcher._proc
    assert root is not None
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    todo, total = [root.pid], 0
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def test_a_header_that_never_ends_is_killed_at_its_deadline(hol_base: WarmProcess) -> None:
    proc = hol_base.clone()
    spin = "let rec spin () = spin () in spin ();;\n"
    started = time.monotonic()
    with pytest.raises(CheckerError):
        proc.load(hol_base.launcher.scratch_file("context", spin), "", timeout=3.0)
    assert time.monotonic() - started < 15.0
    before = sandbox_cpu_seconds(hol_base)
    time.sleep(2.0)
    assert sandbox_cpu_seconds(hol_base) - before < 0.5  # nothing of it still runs
    after = hol_base.clone()  # the base still serves
    try:
        assert after.add_goal("g", TRUE_GOAL) is None
        assert after.check("g", "ARITH_TAC", 30.0, 4096).verdict == Verdict.OK
    finally:
        after.close()


def test_a_header_that_takes_too_much_memory_fails_to_load(hol_base: WarmProcess) -> None:
    proc = hol_base.clone()
    hog = "let proofeval_hog = Array.make (1 lsl 30) 0;;\n"  # 8 GiB
    started = time.monotonic()
    try:
        with pytest.raises(CheckerError, match="failed to load"):
            proc.load(hol_base.launcher.scratch_file("context", hog), "", memory_mb=4096)
    finally:
        proc.close()
    assert time.monotonic() - started < 30.0


# --- every phase of a step within its limit ------------------------------------------------

# A type error whose type, printed without sharing, has 2^32 leaves: the type checker
# finds it at once, printing it never ends.
EXPONENTIAL_TYPE = (
    "(let f0 x = (x, x) in let f1 x = f0 (f0 x) in let f2 x = f1 (f1 x) in"
    " let f3 x = f2 (f2 x) in let f4 x = f3 (f3 x) in f4 (f4 ALL_TAC) : tactic)"
)


def test_a_step_whose_error_never_ends_printing_answers_within_its_limit(
    hol_base: WarmProcess,
) -> None:
    from proofeval.scale.sessions import States
    from proofeval.states import StepError

    checker = Checker(CheckSettings(workers=1), warm={"hol-light": hol_base})
    with checker, States(checker) as states, states.session() as session:
        root = session.start(problem("hol-light", TRUE_GOAL))
        started = time.monotonic()
        failed = session.apply(root, EXPONENTIAL_TYPE, timeout=2.0)
        spent = time.monotonic() - started
        assert isinstance(failed, StepError), failed
        assert spent < 3.0, (spent, failed.outcome)
        after = session.apply(root, "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]")
        assert not isinstance(after, StepError) and after.solved
