"""The second line behind an OK: the theorem must replay, step by step, through the kernel
of a clean process.

The parse-tree check (test_hol_forged_theorems.py) keeps answers from reaching the
constructs that break OCaml's type safety. These tests assume it has failed: code that a
context defines is never parse-checked, so a context can forge theorems with Obj.magic
exactly as a type-confusion bug would, and hand the forgery to an answer as a plain
tactic name. Every forgery must come out CHEATING; honest proofs, including ones that
define constants or instantiate types, must still be OK. The replay is also attacked on
its own, with step records written by hand.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from proofeval.commands.options import add_checker_options, checker_settings
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.native import is_hol_light_3
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess
from tests.conftest import on_both_paths, with_context


def chain(n: int) -> str:
    """HOL Light code that leaves `th`, `x = x` made by n TRANS steps of one theorem."""
    return f"let r = REFL `x:num` in let th = ref r in for i = 1 to {n} do th := TRANS !th r done"


hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

# Code from a benchmark's setup, which may use every module: the tactics below return
# values that only look like theorems, as a soundness bug of the compiler would.
FORGING_CONTEXT = r"""
let forge (asl, c) : thm = Obj.magic (ref (asl, c));;
let overwrite (th : thm) (asl, c) = (Obj.magic th : (term list * term) ref) := (asl, c); th;;
let justify f : tactic = fun (asl, w) -> (null_meta, [], fun _ _ -> f w);;
(* a made-up theorem of the goal itself *)
let FORGED_TAC = justify (fun w -> forge ([], w));;
(* |- F made up, then the goal derived from it by real kernel rules *)
let FORGED_PREMISE_TAC = justify (fun w -> CONTR w (forge ([], `F`)));;
(* a theorem from before the attempt, rewritten in place to state the goal *)
let MUTATED_OLD_TAC = justify (fun w -> overwrite TRUTH ([], w));;
(* a theorem the kernel made during the attempt, rewritten in place *)
let MUTATED_NEW_TAC = justify (fun w -> overwrite (REFL `x:bool`) ([], w));;
(* a kernel-made theorem of the goal, its hypothesis dropped in place *)
let DROPPED_HYP_TAC = justify (fun w -> overwrite (ASSUME w) ([], w));;
(* a kernel-made theorem rewritten to state the goal, its step a term that contains
   itself: writing the step never ends (the child overflows its stack, or stops) *)
let CYCLIC_STEP_TAC = justify (fun w ->
  let t = mk_comb (`~`, `T`) in
  Obj.set_field (Obj.repr t) 1 (Obj.repr t);
  let th = REFL t in
  let p = Obj.field (Obj.repr th) 0 in
  Obj.set_field p 1 (Obj.repr w);
  th);;
(* a kernel-made theorem rewritten in place to state the goal, its number kept *)
let RENUMBERED_TAC = justify (fun w ->
  let th = REFL `x:bool` in
  Obj.set_field (Obj.field (Obj.repr th) 0) 1 (Obj.repr w); th);;
(* a made-up theorem of the goal carrying the number of a real one *)
let BORROWED_NUMBER_TAC = justify (fun w ->
  let th = ASSUME w in
  let n = Obj.field (Obj.field (Obj.repr th) 0) 2 in
  (Obj.magic (ref (Obj.repr [], Obj.repr w, n)) : thm));;
(* honest: |- t = t for a copy of t made just after a minor collection, so that each
   copy has the address in the minor heap that the previous copy had *)
let FRESH_REFL_TAC (asl, w) =
  Gc.minor ();
  let l = lhand w in
  ACCEPT_TAC (REFL (mk_comb (rator l, rand l))) (asl, w);;
"""

FORGERIES = ["FORGED_TAC", "FORGED_PREMISE_TAC", "MUTATED_OLD_TAC", "MUTATED_NEW_TAC",
             "DROPPED_HYP_TAC", "RENUMBERED_TAC", "BORROWED_NUMBER_TAC"]  # fmt: skip
GOALS = ["`F`", "`2 + 3 = 6`", "`1 + 1 = 2`"]


@pytest.fixture(scope="module")
def forging(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    proc = with_context(hol_base, FORGING_CONTEXT)
    for i, goal in enumerate(GOALS):
        assert proc.add_goal(f"g{i}", goal) is None
    yield proc
    proc.close()


def test_a_context_is_numbered_before_it_is_cloned(hol_base: WarmProcess) -> None:
    """The theorems a context made are numbered in it before a clone is forked, once,
    not by each clone on its first check: a full collection there writes to every page
    it shares with its parent (0.9 s for each new worker or statement in bytecode)."""
    proc = with_context(hol_base, "let proofeval_made = ARITH_RULE `1 + 1 = 2`;;")
    unnumbered = "string_of_bool !Proofeval_kernel_log.changed"
    try:
        assert proc.eval_string(unnumbered) == "true"
        clone = proc.clone()
        try:
            assert clone.eval_string(unnumbered) == "false"
        finally:
            clone.close()
    finally:
        proc.close()


@pytest.mark.parametrize("goal", range(len(GOALS)), ids=GOALS)
@pytest.mark.parametrize("tactic", FORGERIES)
def test_a_forged_theorem_does_not_replay(forging: WarmProcess, tactic: str, goal: int) -> None:
    out = forging.check(f"g{goal}", tactic, 30.0, 2048)
    assert out.verdict == Verdict.CHEATING, out
    assert "does not replay" in out.message, out


def test_an_ok_whose_steps_never_arrive_is_not_ok(forging: WarmProcess) -> None:
    """The child writes each step as it is made; when it cannot write one (ERROR: a term
    that contains itself, or the memory) or never finishes (TIMEOUT), the verdict is
    never OK."""
    out = forging.check("g0", "CYCLIC_STEP_TAC", 5.0, 2048)
    assert out.verdict in (Verdict.ERROR, Verdict.TIMEOUT), out
    assert "kernel steps" in out.message, out


@pytest.mark.parametrize(
    "answer",
    [
        "ACCEPT_TAC (Hol.REFL `1 + 1`)",  # the kernel without its log
        "(Proofeval_kernel_log.recording := false; ARITH_TAC)",
    ],
)
def test_an_answer_cannot_reach_around_the_log(forging: WarmProcess, answer: str) -> None:
    out = forging.check("g2", answer, 30.0, 2048)
    assert (out.verdict, out.stage) == (Verdict.CHEATING, Stage.PRECHECK), out
    assert "is not allowed" in out.message, out


def test_an_honest_proof_in_the_same_context_is_ok(forging: WarmProcess) -> None:
    out = forging.check("g2", "ARITH_TAC", 30.0, 2048)
    assert out.verdict == Verdict.OK, out


def test_terms_at_a_reused_address_replay_as_themselves(forging: WarmProcess) -> None:
    """The kernel log finds a term it wrote by its address; a term in the minor heap only
    until the next minor collection, after which another term may have that address.
    Each conjunct here is proved from a term made at the address of the previous one: a
    log that named the earlier term would replay a different theorem."""
    goal = " /\\ ".join(f"SUC {i} = SUC {i}" for i in range(20))
    assert forging.add_goal("reused", f"`{goal}`") is None
    out = forging.check("reused", "REPEAT CONJ_TAC THEN FRESH_REFL_TAC", 60.0, 2048)
    assert out.verdict == Verdict.OK, out


def assert_ok_in_a_clone(core: WarmProcess, goal: str, proof: str, timeout: float) -> None:
    proc = core.clone()
    try:
        assert proc.add_goal("g", goal) is None
        out = proc.check("g", proof, timeout, 2048)
    finally:
        proc.close()
    assert out.verdict == Verdict.OK, out


def test_theorems_that_outlive_minor_collections_keep_their_slots(core: WarmProcess) -> None:
    """A theorem made in the minor heap is found dead or copied out at the end of the next
    minor collection; only a dead one's slot is freed. These 2,000 theorems are made
    first, outlive the collections of a long chain, and are premises after it: a log that
    freed a live theorem's slot would name whatever filled the slot since."""
    proof = (
        "let kept = map (fun i -> REFL (mk_small_numeral i)) (0--1999) in "
        + chain(100000)
        + "; ACCEPT_TAC (CONJUNCT1 (CONJ !th (end_itlist CONJ kept)))"
    )
    assert_ok_in_a_clone(core, "`x:num = x`", proof, 60.0)


@pytest.mark.parametrize(
    ("goal", "proof"),
    [
        ("`!n. n + 0 = n`", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"),
        ("`!x:A. x = x`", "GEN_TAC THEN REFL_TAC"),  # type variables: INST_TYPE steps
        ("`!p q. p /\\ q ==> q /\\ p`", "MESON_TAC[]"),
        ("`2 EXP 10 = 1024`", "CONV_TAC NUM_REDUCE_CONV"),
        ("`(\\x. x + 1) 2 = 3`", "CONV_TAC(DEPTH_CONV BETA_CONV) THEN ARITH_TAC"),
        (
            "`?f:num->num. !n. f n = n + 1`",  # a definition made during the attempt
            "let th = new_definition `proofeval_succ n = n + 1` in "
            "EXISTS_TAC `proofeval_succ` THEN REWRITE_TAC[th]",
        ),
    ],
)
def test_honest_proofs_replay(core: WarmProcess, goal: str, proof: str) -> None:
    assert_ok_in_a_clone(core, goal, proof, 60.0)


# Declarations add no axiom: each is written and made again by the replay, so the proofs
# that make one on their way are OK; only a changed set of axioms is CHEATING.
DECLARING = [
    (
        "`!x:num. x = x`",  # new_type: a term of the new type is written after it
        '(new_type ("proofeval_ty", 0); '
        'ignore (REFL (mk_var ("y", mk_type ("proofeval_ty", [])))); GEN_TAC THEN REFL_TAC)',
    ),
    (
        "`?n:num. n = n`",  # new_constant, then a proof that names it
        '(new_constant ("proofeval_c", `:num`); '
        'EXISTS_TAC (mk_const ("proofeval_c", [])) THEN REFL_TAC)',
    ),
    (
        "`?n:num. n = 1`",  # new_basic_definition
        "let th = new_basic_definition `proofeval_one = 1` in "
        "EXISTS_TAC `proofeval_one` THEN ACCEPT_TAC th",
    ),
    (
        "`T`",  # new_basic_type_definition (through new_type_definition)
        'let th = new_type_definition "proofeval_unit" ("proofeval_mk", "proofeval_dest") '
        "(prove (`?b:bool. b`, EXISTS_TAC `T` THEN ACCEPT_TAC TRUTH)) in "
        "ignore (REFL (rand (concl th))); ACCEPT_TAC TRUTH",
    ),
    (
        "`?f. !n. f n = n + n`",  # a recursive definition (new_specification)
        "let th = define `proofeval_twice 0 = 0 /\\ "
        "proofeval_twice (SUC n) = SUC (SUC (proofeval_twice n))` in "
        "EXISTS_TAC `proofeval_twice` THEN INDUCT_TAC THEN ASM_REWRITE_TAC[th; ADD_CLAUSES]",
    ),
]


@pytest.mark.parametrize(("goal", "proof"), DECLARING,
                         ids=["new_type", "new_constant", "definition", "type_definition",
                              "define"])  # fmt: skip
def test_proofs_that_declare_replay(core: WarmProcess, goal: str, proof: str) -> None:
    assert_ok_in_a_clone(core, goal, proof, 60.0)


def test_a_proof_that_adds_an_axiom_is_cheating(core: WarmProcess) -> None:
    proc = core.clone()
    try:
        assert proc.add_goal("g", "`F`") is None
        out = proc.check("g", "ACCEPT_TAC (new_axiom `F`)", 30.0, 2048)
    finally:
        proc.close()
    assert out.verdict == Verdict.CHEATING, out


# --- a quick attempt's steps are kept, and written only when an OK needs them ---------------

# In a clone, the child's set-up for an attempt, its steps written to /dev/null, with
# an empty minor heap (a child whose heap is nearly full writes from its first step).
RECORDING = (
    "Gc.minor (); Proofeval_kernel_log.record_steps "
    '(Some (open_out_bin "/dev/null", fun () -> failwith "unwritten")); '
)


def recorded(core: WarmProcess, steps: str, header: str = "") -> str:
    """What `steps` leaves written, in a clone recording as an attempt's child does: the
    highest slot a record filled, whether steps are still only kept, and how many were."""
    proc = with_context(core, header) if header else core.clone()
    try:
        return proc.eval_string(
            f'({RECORDING}{steps}; Printf.sprintf "%d %b %d" !Proofeval_identity.high '
            "!Proofeval_kernel_log.keeping !Proofeval_kernel_log.kept)"
        )
    finally:
        proc.close()


def test_a_quick_fail_writes_no_step(core: WarmProcess) -> None:
    """Its 112 kernel steps are only kept: a FAIL needs no record. The first step after a
    minor collection writes them (kept longer, the collector would copy them)."""
    fail = "(try ignore (prove (`!n. n + 0 = n`, REWRITE_TAC[MULT_CLAUSES])) with Failure _ -> ())"
    assert recorded(core, fail) == "0 true 112"
    high, keeping, _ = recorded(core, f"{fail}; Gc.minor (); ignore (REFL `x:bool`)").split()
    assert int(high) > 112 and keeping == "false"


# A minor heap that 70,000 TRANS steps do not fill: no collection ends the keeping, the
# bound on kept steps (65,536) does.
BIG_MINOR_HEAP = "Gc.set { (Gc.get ()) with Gc.minor_heap_size = 1 lsl 23 };;"
LONG_CHAIN = chain(70000) + "; ACCEPT_TAC !th"


def test_steps_kept_to_their_bound_are_written_in_order(core: WarmProcess) -> None:
    keeping_ended = recorded(
        core,
        "let n = Proofeval_identity.minor_collections () in "
        + chain(70000)
        + '; if Proofeval_identity.minor_collections () <> n then failwith "collected"',
        BIG_MINOR_HEAP,
    )
    assert keeping_ended.split()[1:] == ["false", "65536"], keeping_ended
    proc = with_context(core, BIG_MINOR_HEAP)
    try:
        assert proc.add_goal("g", "`x:num = x`") is None
        out = proc.check("g", LONG_CHAIN, 60.0, 2048)
    finally:
        proc.close()
    assert out.verdict == Verdict.OK, out


# --- what the line costs: no case that grows faster than the proof ---------------------------

# A long chain of one equal theorem: 75 s for N = 10^5 when theorems were found in weak
# tables keyed by their content (equal theorems collided), 0.01 s in plain HOL Light.
CHAIN = chain(100000) + "; ACCEPT_TAC !th"
# A derivation of 2^60 paths and 61 nodes, compared with itself: equality on theorems must
# not walk the derivation they carry (it does not stop at physically equal values).
DOUBLED = (
    "let th = ref (REFL `x:num`) in for i = 1 to 60 do th := TRANS !th !th done; "
    "if !th = !th && compare !th !th = 0 then ACCEPT_TAC !th else NO_TAC"
)


@pytest.mark.parametrize("proof", [CHAIN, DOUBLED], ids=["chain", "doubled"])
def test_long_and_shared_derivations_replay_in_time(core: WarmProcess, proof: str) -> None:
    assert_ok_in_a_clone(core, "`x:num = x`", proof, 30.0)


# One term of 2^60 paths and 121 nodes, used twice, with minor collections between
# (allocation forces them): the first use wrote it from the log's cache of young terms
# (it is made just before, with little allocation),
# which a minor collection empties, so the second writes it again. The replay must know
# the second copy as the first term; else its TRANS compares two copies along every path,
# where the child compares one value with itself at once.
SHARED_TERM = (
    "let x = `x:num` and plus = `(+):num->num->num` in "
    "let rec doubled n = if n = 0 then x else "
    "let s = doubled (n - 1) in mk_comb (mk_comb (plus, s), s) in "
    "let t = doubled 60 in let th = REFL t in "
    "for i = 1 to 8 do ignore (List.init 1000000 (fun i -> i)) done; "
    "ignore (TRANS th (REFL t)); ACCEPT_TAC (REFL `x:num`)"
)


def test_a_term_written_twice_replays_as_one(core: WarmProcess) -> None:
    assert_ok_in_a_clone(core, "`x:num = x`", SHARED_TERM, 10.0)


# The same, with 20,000 other terms written between the two uses: the replay's table of
# terms by their parts grows and drops its dead several times meanwhile, and must keep
# every entry whose term is alive.
SHARED_ACROSS_GROWTH = SHARED_TERM.replace(
    "let th = REFL t in ",
    "let th = REFL t in let others = map (fun i -> REFL (mk_small_numeral i)) (0--19999) in ",
).replace("ACCEPT_TAC", "if others = [] then NO_TAC else ACCEPT_TAC")


def test_a_term_written_twice_replays_as_one_across_the_tables_growth(core: WarmProcess) -> None:
    assert SHARED_ACROSS_GROWTH.count("others") == 2
    assert_ok_in_a_clone(core, "`x:num = x`", SHARED_ACROSS_GROWTH, 20.0)


# A term of 2^60 paths made by the kernel itself: each MK_COMB makes the two sides of its
# theorem as two new values of the same parts. The child names a side of the theorem
# (REFL of it, TRANS with it) and compares one value with itself at once; the replay must
# take that side from its own theorem, not rebuild it from its parts (a copy, or the
# other side: then TRANS compares them along every path).
KERNEL_SHARED = (
    "let plus = REFL `(+):num->num->num` in let th = ref (REFL `x:num`) in "
    "for i = 1 to 60 do th := MK_COMB (MK_COMB (plus, !th), !th) done; "
    "let l = lhand (concl !th) and r = rand (concl !th) in "
    "ignore (TRANS !th (REFL r)); ignore (TRANS (REFL l) !th); ACCEPT_TAC (REFL `x:num`)"
)


def test_a_side_the_kernel_made_replays_as_itself(core: WarmProcess) -> None:
    assert_ok_in_a_clone(core, "`x:num = x`", KERNEL_SHARED, 15.0)


# One step that names a term of 2^15 nodes never written before: its records (some 300 KB)
# outgrow the child's buffer of records not yet sent, which grows in the middle of a record.
# The two numbers of an application's record went to the old buffer, leaving whatever the
# new one held (an honest s2n-bignum proof got CHEATING: "no earlier term 0").
BIG_STEP = (
    "let x = `x:num` and plus = `(+):num->num->num` in "
    "let rec tree n = if n = 0 then x else mk_comb (mk_comb (plus, tree (n - 1)), tree (n - 1)) in "
    "ignore (REFL (tree 14)); ACCEPT_TAC (REFL x)"
)


def test_a_step_larger_than_the_writers_buffer_replays(core: WarmProcess) -> None:
    assert_ok_in_a_clone(core, "`x:num = x`", BIG_STEP, 30.0)


# A term written before the log's caches grow (made anew, four times larger, after 512,
# 2,048, 8,192 and 32,768 theorems) and named after: each growth drops the slots of the
# terms the caches held, so the term is written again (the term `x + 0` once young, once
# promoted by the allocation). A growth that kept an entry would name a freed slot.
ACROSS_GROWTHS = (
    "let t = `x + 0` in let a = REFL t in "
    "for i = 1 to 8 do ignore (List.init 1000000 (fun i -> i)) done; "
    "let b = REFL t in " + chain(40000) + "; ACCEPT_TAC (TRANS (TRANS a b) (REFL t))"
)


def test_a_term_named_across_the_caches_growth_replays(core: WarmProcess) -> None:
    assert_ok_in_a_clone(core, "`x + 0 = x + 0`", ACROSS_GROWTHS, 30.0)


# Each theorem from before the attempt is written once, as an OLD record, and found again by
# its serial in a table that grows (256 entries, kept under half full): these 300 make it
# grow twice while the proof names them. A table that gave a serial another's slot would
# replay a conjunction of other theorems.
def test_theorems_from_before_the_attempt_keep_their_records(core: WarmProcess) -> None:
    olds = "let refl_numerals = map (fun i -> REFL (mk_small_numeral i)) (0--299);;\n"
    proc = with_context(core, olds)
    try:
        goal = " /\\ ".join(f"{i} = {i}" for i in range(300))
        assert proc.add_goal("olds", f"`{goal}`") is None
        out = proc.check("olds", "ACCEPT_TAC (end_itlist CONJ refl_numerals)", 60.0, 2048)
    finally:
        proc.close()
    assert out.verdict == Verdict.OK, out


def test_replay_off_trusts_the_attempt_and_says_so(forging: WarmProcess) -> None:
    """--replay off: the child's OK stands (a forgery that only layer 6 catches passes),
    and its message says it was not replayed; on, the same attempt is CHEATING."""
    off = forging.check("g1", "FORGED_TAC", 30.0, 2048, replay=False)
    assert off.verdict == Verdict.OK, off
    assert "not replayed" in off.message, off
    on = forging.check("g1", "FORGED_TAC", 30.0, 2048, replay=True)
    assert on.verdict == Verdict.CHEATING, on


def test_replay_is_a_checker_option() -> None:
    """Every command that checks (check, run, demo, baseline, serve) takes --replay on|off."""
    parser = argparse.ArgumentParser()
    add_checker_options(parser)
    assert checker_settings(parser.parse_args([])).replay is True
    assert checker_settings(parser.parse_args(["--replay", "off"])).replay is False
    with pytest.raises(SystemExit):
        parser.parse_args(["--replay", "maybe"])


# --- the replay on its own: step records written by hand ------------------------------------


# The stream's record kinds (proofeval_replay.ml), by the names these tests write them with.
KINDS = {"Y V": "Y", "Y A": "K", "M V": "V", "M C": "C", "M A": "A", "M L": "L", "F": "F", "G": "G",
         "END": "E", "D TYPE": "T", "D CONST": "N"}  # fmt: skip
RULES = {"REFL": "r", "TRANS": "t", "MK_COMB": "m", "ABS": "a", "BETA": "b", "ASSUME": "s",
         "EQ_MP": "e", "DEDUCT": "d", "INST": "i", "INST_TYPE": "j", "DEF": "D", "TYDEF": "P",
         "OLD": "O", "AXIOM": "X", "FORGED": "Z"}  # fmt: skip
# how many hex names follow
NAMED = {"Y V": 1, "Y A": 1, "M V": 1, "M C": 1, "T TYDEF": 3, "D TYPE": 1, "D CONST": 1}


def leb128(n: int) -> bytes:
    out = bytearray()
    while n >= 128:
        out.append(n & 127 | 128)
        n >>= 7
    return bytes([*out, n])


def encode(steps: str | bytes) -> bytes:
    """The stream a writer would send for records written one a line, as the replay's
    comment shows them (`T 3 ASSUME 2`, names in hex); bytes are sent as they are."""
    if isinstance(steps, bytes):
        return steps
    out = bytearray()
    for line in steps.splitlines():
        kind, slot, *rest = line.split(" ")
        if kind in ("Y", "M", "T", "D"):
            kind, rest = f"{kind} {rest[0]}", rest[1:]
        code = RULES[kind[2:]] if kind.startswith("T ") else KINDS[kind]
        names = NAMED.get(kind, 0)
        out += code.encode() + leb128(int(slot))
        for word in rest[:names]:
            out += leb128(len(word) // 2) + bytes.fromhex(word)
        for word in rest[names:]:
            out += leb128(int(word))
    return bytes(out)


def replay(proc: WarmProcess, steps: str | bytes) -> str:
    """What the replay makes of `steps`: the theorem it rebuilt, or why it refused."""
    text = "".join(f"\\{b:03d}" for b in encode(steps))
    expr = (
        "(Proofeval_kernel_log.refresh_olds (); "
        f'try let th = Proofeval_replay.replay "{text}" in '
        'String.concat "," (map string_of_term (hyp th)) ^ "|-" ^ string_of_term (concl th) '
        'with Failure why -> "refused: " ^ why)'
    )
    return proc.eval_string(expr)


def hexname(s: str) -> str:
    return s.encode().hex()


BOOL = f"Y 1 A {hexname('bool')} 0\n"
FALSE = "false" if is_hol_light_3(DEBIAN_HOL_LIGHT) else "F"  # HOL Light 3 prints F so
P = BOOL + f"M 2 V {hexname('p')} 1\n"


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (P + "T 3 ASSUME 2\nEND 3\n", "p|-p"),
        (P + "T 3 REFL 2\nEND 3\n", "|-p <=> p"),
        (P + "T 3 FORGED\nEND 3\n", "refused: record 3: a theorem that the kernel did not make"),
        (P + "T 3 AXIOM\nEND 3\n", "refused: record 3: the proof adds an axiom"),
        (P + "T 3 OLD 999999999\nEND 3\n", "refused: record 3: no theorem 999999999 before"),
        (P + "T 3 ASSUME 7\nEND 3\n", "refused: record 3: no earlier term 7"),
        (P + "T 3 ASSUME 2\nT 3 REFL 2\nEND 3\n", "refused: record 4: record 3 twice"),
        (P + "T 3 ASSUME 2\nEND 3\nT 4 REFL 2\n", "refused: record 5: records after END"),
        (P + "T 3 ASSUME 2\n", "refused: no END record"),
        (P + "M 3 A 2 2\n", "refused: record 3: "),  # p applied to p: mk_comb refuses
        (BOOL + f"M 2 C {hexname('F')} 1\nT 3 ASSUME 2\nEND 3\n", f"{FALSE}|-{FALSE}"),
        (BOOL + f"M 2 C {hexname('F')} 2\nEND 3\n", "refused: record 2: no earlier type 2"),
        (f"Y 1 A {hexname('num')} 0\nM 2 C {hexname('F')} 1\n", "refused: record 2: "),
        (P + "T 3 ASSUME 2\nT 4 DEDUCT 3 3\nEND 4\n", "|-p <=> p"),
        (P + "T 3 ASSUME 2\nT 4 REFL 2\nT 5 EQ_MP 4 3\nEND 5\n", "p|-p"),
        (P + "T 3 ASSUME 2\nT 4 EQ_MP 3 3\nEND 4\n", "refused: record 4: EQ_MP"),
        # the stream's own shape: a kind no writer sends, a number or a name too long, a cut
        (
            encode(P + "T 3 ASSUME 2\n") + b"E" + b"\xff" * 8 + b"\x01",
            "refused: record 4: a number too long",
        ),
        (
            encode(P + "T 3 REFL 2\n") + b"\x02" + leb128(3),
            "refused: record 4: unknown record '\\002'",
        ),
        (encode(BOOL) + b"V\x02" + leb128(2**24 + 1) + b"p", "refused: record 2: a name too long"),
        (encode(P) + b"s\x03", "refused: no END record"),
        (encode(P + "T 3 ASSUME 2\n") + b"E" + b"\xff" * 5, "refused: no END record"),
        (P + "T 3 ASSUME 2\nT 4 REFL 2\nF 4\nEND 3\n", "p|-p"),
        (P + "T 3 ASSUME 2\nF 3\nEND 3\n", "refused: record 5: no earlier theorem 3"),
        (P + "T 3 ASSUME 2\nF 3\nF 3\nEND 3\n", "refused: record 5: no earlier theorem 3"),
        (P + "F 2\nEND 2\n", "refused: record 3: no earlier theorem 2"),
        # slots: a record fills an empty slot, at most one above the highest so far
        (P + "T 4 ASSUME 2\nEND 4\n", "refused: record 3: record 4 out of order"),
        (P + "T 3 ASSUME 2\nF 3\nT 3 REFL 2\nEND 3\n", "|-p <=> p"),  # reused: a name
        (P + "T 3 ASSUME 2\nF 3\nT 4 REFL 2\nEND 3\n", "refused: record 6: no earlier theorem 3"),
        (P + "M 2 V 71 1\nEND 2\n", "refused: record 3: record 2 twice"),
        # G: a term not used again
        (P + "T 3 ASSUME 2\nG 2\nEND 3\n", "p|-p"),
        (P + "G 2\nT 3 ASSUME 2\nEND 3\n", "refused: record 4: no earlier term 2"),
        (P + "G 2\nG 2\n", "refused: record 4: no earlier term 2"),
        (P + "T 3 ASSUME 2\nG 3\nEND 3\n", "refused: record 4: no earlier term 3"),
        (P + "G 1\n", "refused: record 3: no earlier term 1"),  # a type is never freed
        (P + "G 2\nM 2 V 71 1\nT 3 ASSUME 2\nEND 3\n", "q|-q"),
    ],
)
def test_the_replay_trusts_nothing_it_reads(core: WarmProcess, steps: str, expected: str) -> None:
    got = replay(core, steps)
    assert got.startswith(expected), got


def test_the_replay_makes_declarations_in_order(core: WarmProcess) -> None:
    """A declaration (D TYPE, D CONST) fills no slot and is made when it comes: the records
    after it may name it, those before it may not. In a clone: each is made for good."""
    ty, k = hexname("proofeval_hand_ty"), hexname("proofeval_hand_k")
    declare = f"D 0 TYPE {ty} 0\nY 2 A {ty} 0\nD 0 CONST {k} 2\n"
    cases = [
        (
            BOOL + declare + f"M 3 C {k} 2\nT 4 REFL 3\nEND 4\n",
            "|-proofeval_hand_k = proofeval_hand_k",
        ),
        (BOOL + f"Y 2 A {ty} 0\n", "refused: record 2: mk_type"),  # named before it is made
        (BOOL + f"D 2 TYPE {ty} 0\n", "refused: record 2: a declaration fills no slot"),
        (BOOL + f"D 0 TYPE {hexname('bool')} 0\n", "refused: record 2: new_type"),  # made before
        (BOOL + f"D 0 CONST {hexname('T')} 1\n", "refused: record 2: new_constant"),
    ]
    for steps, expected in cases:
        proc = core.clone()
        try:
            got = replay(proc, steps)
        finally:
            proc.close()
        assert got.startswith(expected), (steps, got)
