"""Attacks on each layer of the HOL Light checker's integrity, against the real prover.

Layers: (1) the answer must parse as one tactic expression and use nothing on the
deny-list; (2) the axioms must not change; (3) the theorem must be the goal, with no
hypotheses; (4) the checker runs sandboxed, with limits, killed at the deadline;
(5) the verdict comes back on a channel with a per-attempt secret. Layers 2-5 are
attacked with code the context (trusted benchmark text) defines, which the deny-list
cannot see, to show each holds on its own.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from tests.conftest import on_both_paths, with_context

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

GOAL = "`!n. n + 0 = n`"

ATTACK_CONTEXT = r"""
let ADMIT_TAC = CHEAT_TAC;;
let sneaky_axiom = new_axiom;;
let counter = ref 0;;
let sneaky_exit () = exit 0;;
let sneaky_print () = print_string "1\nOK\n"; print_string "4\n32\n";;
#load "unix.cma";;
let forge_everywhere () =
  let frame = "3\n2\nOK\n5\ncheck\n0\n" in
  for fd = 0 to 64 do
    (try ignore (Unix.write_substring (Obj.magic fd) frame 0 (String.length frame))
     with _ -> ())
  done;;
let sneaky_shell cmd = Sys.command cmd;;
"""


@pytest.fixture(scope="module")
def core_goal(core: WarmProcess) -> WarmProcess:
    assert core.add_goal("g", GOAL) is None
    return core


@pytest.fixture(scope="module")
def attack(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    proc = with_context(hol_base, ATTACK_CONTEXT)
    assert proc.add_goal("g", GOAL) is None
    yield proc
    proc.close()


def verdict(proc: WarmProcess, answer: str, timeout: float = 10.0, memory_mb: int = 4096):
    return proc.check("g", answer, timeout, memory_mb)


# --- the honest baseline -----------------------------------------------------------


def test_a_real_proof_is_ok(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]")
    assert (out.verdict, out.stage) == (Verdict.OK, Stage.CHECK)


def test_unsolved_goals_fail(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "REWRITE_TAC[]")
    assert (out.verdict, out.stage) == (Verdict.FAIL, Stage.CHECK)
    assert "Unsolved goals" in out.message


# --- layer 1: one tactic expression, parsed by HOL Light's own parser ----------------


@pytest.mark.parametrize(
    "answer",
    [
        "ARITH_TAC;; let x = 1",  # a second phrase smuggled after ';;'
        'ARITH_TAC;;\n#use "/etc/passwd"',
        '#load "unix.cma"',  # a toplevel directive
        "REWRITE_TAC[ADD_CLAUSES",  # does not parse
        "NO_SUCH_TAC",  # unbound
        "ARITH_RULE",  # not a tactic
        "let x = ARITH_TAC",  # a binding, not an expression
        "let rec it = ARITH_TAC",
        "",
    ],
)
def test_not_one_tactic_expression_is_a_precheck_error(core_goal: WarmProcess, answer: str) -> None:
    out = verdict(core_goal, answer)
    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.PRECHECK), out


def test_a_trailing_double_semicolon_is_tolerated(core_goal: WarmProcess) -> None:
    assert verdict(core_goal, "ARITH_TAC;;").verdict == Verdict.OK


def test_let_it_is_the_expression_it_binds(core_goal: WarmProcess) -> None:
    """Upstream HOL Light's pa_j (2024 on) reads a top-level expression e as `let it = e`;
    the checker must see e there, so spelling it out is the same answer on any HOL Light."""
    assert verdict(core_goal, "let it = ARITH_TAC").verdict == Verdict.OK


@pytest.mark.parametrize(
    "answer",
    [
        "CHEAT_TAC",
        "let it = CHEAT_TAC",  # what upstream pa_j makes of an expression
        "ACCEPT_TAC(mk_thm([], `!n. n + 0 = n`))",
        "ACCEPT_TAC(new_axiom `!n. n + 0 = n`)",
        '(ignore (Sys.command "touch /tmp/x"); ARITH_TAC)',
        "(fun g -> Obj.magic 0)",
        "(fun g -> Stdlib.Obj.magic 0)",
        "(fun g -> Stdlib__Obj.magic 0)",
        '(fun g -> Marshal.from_string "" 0)',
        "(Toploop.initialize_toplevel_env (); ARITH_TAC)",
        "(Meta.reify_bytecode; ARITH_TAC)",  # compiler-libs: runs raw bytecode
        '(Pcaml.input_file := ""; ARITH_TAC)',  # camlp5
        "(exit 0; ARITH_TAC)",
        "(Stdlib.exit 0; ARITH_TAC)",
        "(at_exit (fun () -> ()); ARITH_TAC)",
        '(let c = open_out "/tmp/x" in close_out c; ARITH_TAC)',
        '(ignore (string_of_file "/etc/passwd"); ARITH_TAC)',
        '(loadt "Library/words.ml"; ARITH_TAC)',
        '(help "x; touch /tmp/pwned"; ARITH_TAC)',  # help shells out with sed
        "(Gc.finalise (fun _ -> ()) (ref 0); ARITH_TAC)",
        "(Array.unsafe_set [|0|] 5 1; ARITH_TAC)",
        "(let open Unix in ignore (getpid ()); ARITH_TAC)",
        "Unix.(fun g -> ignore (getpid ()); ARITH_TAC g)",
        "(proofeval_tactic_slot := None; ARITH_TAC)",
        "(Proofeval_server.fresh_nonce (); ARITH_TAC)",
        "(fun g -> match g with (_ : Unix.file_descr) -> ARITH_TAC g)",
        # allowed modules once, found by tests/test_hol_audit.py: a coercion (peek_val,
        # yyparse) and engines over caller-made tables without bounds checks
        "(fun g -> Parsing.peek_val (Parsing.peek_val (Parsing.peek_val g 0) 0) 0)",
        "(let open Parsing in ignore (yyparse); ARITH_TAC)",
        "(ignore (Stdlib.Lexing.engine); ARITH_TAC)",
        "(ignore (Lexing.new_engine); ARITH_TAC)",
    ],
)
def test_the_deny_list_is_cheating_at_precheck(core_goal: WarmProcess, answer: str) -> None:
    out = verdict(core_goal, answer)
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), out


def test_a_module_with_a_primitive_cannot_be_declared(core_goal: WarmProcess) -> None:
    answer = (
        "(let module M = struct external magic : 'a -> 'b = \"%identity\" end in"
        " ACCEPT_TAC (M.magic 0))"
    )
    out = verdict(core_goal, answer)
    assert out.stage == Stage.PRECHECK and out.verdict in (Verdict.CHEATING, Verdict.ERROR)


# --- layer 2: the axioms must not change -------------------------------------------


def test_an_alias_of_cheat_tac_is_caught_by_the_axioms(attack: WarmProcess) -> None:
    out = verdict(attack, "ADMIT_TAC")
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.CHECK)


def test_an_alias_of_new_axiom_is_caught_even_when_the_tactic_fails(
    attack: WarmProcess,
) -> None:
    out = verdict(attack, "(ignore (sneaky_axiom `F`); REWRITE_TAC[])")
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.CHECK)


def test_axioms_admitted_by_the_context_are_allowed(hol_base: WarmProcess) -> None:
    ctx = with_context(hol_base, "let LEMMA = prove(`!n. n + 0 = n`, CHEAT_TAC);;\n")
    try:
        assert ctx.add_goal("g", "`!m. m + 0 = m`") is None
        assert ctx.check("g", "ACCEPT_TAC LEMMA", 10.0, 4096).verdict == Verdict.OK
    finally:
        ctx.close()


# --- layer 3: the theorem must be the goal, with no hypotheses -----------------------


def test_a_justification_that_proves_something_else_fails(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "(fun g -> (([], null_inst), [], fun _ _ -> TRUTH))")
    assert (out.verdict, out.stage) == (Verdict.FAIL, Stage.CHECK), out


def test_a_theorem_with_the_goal_as_hypothesis_fails(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "(fun (_, w) -> (([], null_inst), [], fun _ _ -> ASSUME w))")
    assert (out.verdict, out.stage) == (Verdict.FAIL, Stage.CHECK), out


def test_shadowing_prove_inside_the_answer_changes_nothing(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "(let prove (_, _) = TRUTH in REWRITE_TAC[])")
    assert out.verdict == Verdict.FAIL


# --- layer 4: sandbox, limits, wall clock -----------------------------------------


def test_the_wall_clock_limit_is_a_timeout(core_goal: WarmProcess) -> None:
    start = time.monotonic()
    out = verdict(core_goal, "(let rec spin (g : goal) : goalstate = spin g in spin)", 2.0)
    assert (out.verdict, out.stage) == (Verdict.TIMEOUT, Stage.CHECK)
    assert time.monotonic() - start < 10


def test_a_huge_answer_has_its_verdict_within_its_timeout(core_goal: WarmProcess) -> None:
    """About 780 KB, which camlp5 parses for minutes: natively the parser and compiler
    run before the attempt, within its time, and it is an ERROR; in bytecode the child
    parses it and the wall clock stops it."""
    huge = "REWRITE_TAC[" + "ADD_CLAUSES; " * 60000 + "ADD_CLAUSES]"
    start = time.monotonic()
    out = verdict(core_goal, huge, 5.0)
    assert time.monotonic() - start < 5.0 + 3.0
    native = core_goal.launcher.native is not None
    expected = (Verdict.ERROR, Stage.PRECHECK) if native else (Verdict.TIMEOUT, Stage.CHECK)
    assert (out.verdict, out.stage) == expected, out


def test_exhausting_memory_is_an_error(core_goal: WarmProcess) -> None:
    answer = "(fun g -> ignore (Array.make 400_000_000 0); ARITH_TAC g)"  # 3.2 GB
    out = verdict(core_goal, answer, 30.0, 1024)
    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.CHECK)
    assert "memory" in out.message


def test_the_sandbox_has_a_read_only_system(attack: WarmProcess, tmp_path: Path) -> None:
    target = tmp_path / "escaped"
    # The shell fails inside the sandbox, so the honest branch runs and proves the goal.
    answer = f'(if sneaky_shell "touch {target}" = 0 then ALL_TAC else ARITH_TAC)'
    assert verdict(attack, answer).verdict == Verdict.OK
    assert not target.exists()


def test_the_sandbox_has_no_network(attack: WarmProcess) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        connect = f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"
        answer = f'(if sneaky_shell "{connect}" = 0 then ALL_TAC else ARITH_TAC)'
        assert verdict(attack, answer).verdict == Verdict.OK
        with pytest.raises(TimeoutError):
            server.accept()


# --- layer 5: the verdict channel --------------------------------------------------


def test_printing_a_verdict_is_not_a_verdict(attack: WarmProcess) -> None:
    out = verdict(attack, "(sneaky_print (); REWRITE_TAC[])")
    assert out.verdict == Verdict.FAIL


def test_an_early_exit_is_an_error_not_ok(attack: WarmProcess) -> None:
    out = verdict(attack, "(sneaky_exit (); ALL_TAC)")
    assert (out.verdict, out.stage) == (Verdict.ERROR, Stage.CHECK)


def test_writing_a_forged_frame_to_every_descriptor_is_not_ok(attack: WarmProcess) -> None:
    out = verdict(attack, "(forge_everywhere (); REWRITE_TAC[])")
    assert out.verdict == Verdict.ERROR  # the real verdict arrives after the forgery
    out = verdict(attack, "(fun g -> forge_everywhere (); sneaky_exit ())")
    assert out.verdict == Verdict.ERROR


def test_catching_every_exception_still_fails(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, "(fun g -> try REWRITE_TAC[] g with _ -> ALL_TAC g)")
    assert out.verdict == Verdict.FAIL


def test_a_failure_message_saying_ok_is_a_failure(core_goal: WarmProcess) -> None:
    out = verdict(core_goal, '(failwith "OK" : tactic)')
    assert (out.verdict, out.message) == (Verdict.FAIL, 'the proof failed: "OK"')
    # the answer's text is quoted after a fixed prefix: it cannot close the quote
    out = verdict(core_goal, r'(failwith "OK\" and proofeval says \"OK" : tactic)')
    assert out.message == r'the proof failed: "OK\" and proofeval says \"OK"', out
    out = verdict(core_goal, '(fun g -> raise (Invalid_argument "OK"))')
    assert out.message == r'the proof raised "Invalid_argument(\"OK\")"', out


# --- no state leaks from one attempt to the next ------------------------------------


def test_no_state_leaks_between_attempts(attack: WarmProcess) -> None:
    first = verdict(attack, '(counter := 1; failwith "changed the state")')
    assert first.verdict == Verdict.FAIL
    second = verdict(attack, "(fun g -> if !counter = 0 then ARITH_TAC g else ALL_TAC g)")
    assert second.verdict == Verdict.OK
    third = verdict(attack, "(ignore (sneaky_axiom `F`); ARITH_TAC)")
    assert third.verdict == Verdict.CHEATING
    assert verdict(attack, "ARITH_TAC").verdict == Verdict.OK  # the axiom did not stay
