"""The shared context is immutable to attempts and clients (HOL Light, both paths).

Each piece of HOL Light's mutable state that decides how a goal parses or prints, or what
the kernel knows (the interface and its overloads, implicit types, infixes, binders,
prefixes, hidden constants, type abbreviations, reserved words, user parsers and printers,
the parser's and printer's flags, the constant and type tables, axioms and definitions,
the memo tables that `new_definition` and friends answer from, the basic rewrites and
conversions) is changed from a statement, from another client's header and from an
answer. Another problem's context must stay exactly as it was (its fingerprint, read by
proofeval's own trusted code), and so must its goals' verdicts.

tests/test_hol_statements.py holds the statement attacks on the first pieces (interface,
infixes, constant and type tables, two flags) and the shape rule; this file adds the rest
of the state, the headers of other clients, and answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proofeval.client import CheckClient
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.conftest import on_both_paths, with_context
from tests.test_serve import TOKEN, serving

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

# Each mutation, an OCaml expression; every one succeeds in the process it runs in.
ATTACKS = {
    "interface": 'the_interface := ("+", ("*", `:num->num->num`)) :: !the_interface',
    "overload": 'overload_interface ("+", `( * ):num->num->num`)',
    "reduce interface": 'reduce_interface ("+", `(+):num->num->num`)',
    "prioritize": "prioritize_real ()",
    "skeleton": 'make_overloadable "proofeval_op" `:A->A`',
    "implicit types": 'the_implicit_types := ["n", `:bool`]',
    "infix": 'parse_as_infix ("proofeval_op", (12, "right"))',
    "unparse infix": 'unparse_as_infix "+"',
    "binder": 'parse_as_binder "proofeval_b"',
    "prefix": 'parse_as_prefix "proofeval_p"',
    "hide": 'hide_constant "SUC"',
    "type abbrev": 'new_type_abbrev ("proofeval_ab", `:bool`)',
    "reserved": 'reserve_words ["n"]',
    "user parser": 'install_parser ("proofeval", fun _ -> raise Noparse)',
    "user printer": (
        'install_user_printer ("proofeval", fun fmt _ -> Format.pp_print_string fmt "T")'
    ),
    "reverse interface": "reverse_interface_mapping := false",
    "type invention": "type_invention_error := true",
    "varstruct": "ignore_constant_varstruct := false",
    "binops": "unspaced_binops := []",
    "comment token": 'comment_token := Ident "proofeval"',
    "new constant": 'new_constant ("proofeval_c", `:num`)',
    "new type": 'new_type ("proofeval_ty", 0)',
    "new definition": "new_definition `proofeval_d = 1`",
    "new axiom": "new_axiom `1 + 1 = 3`",
    "memo definitions": "the_definitions := [ASSUME `proofeval_x = 1`]",
    "memo specifications": "the_specifications := []",
    "basic rewrites": "extend_basic_rewrites [ASSUME `1 + 1 = 3`]",
    "basic convs": 'extend_basic_convs ("proofeval", (`1 + 1`, K (ASSUME `1 + 1 = 3`)))',
}

# Everything above as proofeval's own code reads it (a digest), and what it makes of a
# few goals: their terms as parsed, and as printed. Theorems are read through dest_thm
# (the kernel log numbers a theorem when an attempt is forked: not a change of state).
FINGERPRINT = """(
  let thms = map dest_thm in
  let parsed = map (fun s -> try Some (parse_term s) with _ -> None)
    ["1 + 1 = 3"; "!n. n + 0 = n"; "SUC 1 = 2"; "&1 + &2 = &3"; "(x:num) IN {y}"] in
  let printed = map (function Some t -> string_of_term t | None -> "") parsed in
  Digest.to_hex (Digest.string (Marshal.to_string
    ((!the_interface, !the_overload_skeletons, !the_implicit_types,
      binders (), prefixes (), infixes ()),
     (reserved_words (), type_abbrevs (), map fst (installed_parsers ()),
      filter is_hidden (map fst (constants ()))),
     ((!reverse_interface_mapping, !type_invention_warning, !type_invention_error,
       !ignore_constant_varstruct),
      (!unspaced_binops, !prebroken_binops, !print_unambiguous_comprehensions,
       !typify_universal_set, !print_all_thm, !comment_token)),
     (constants (), types (), thms (axioms ()), thms (definitions ())),
     (thms !the_definitions,
      map (fun ((names, th), sth) -> (names, dest_thm th, dest_thm sth)) !the_specifications,
      map (fun (k, (a, b)) -> (k, dest_thm a, dest_thm b)) !the_type_definitions,
      map fst !the_inductive_types, thms (basic_rewrites ()), map fst (basic_convs ())),
     (parsed, printed)) [])))"""

FALSE_GOAL = "`1 + 1 = 3`"
TRUE_GOAL = "`!n. n + 0 = n`"
HONEST = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"
HEADER = "let proofeval_victim = 1;;\n"  # the victims' own header


def verdicts(proc: WarmProcess) -> tuple[Verdict, ...]:
    """The verdicts that any of the attacks, had it stayed, would change."""
    return tuple(
        proc.check(goal, proof, 30.0, 4096).verdict
        for goal, proof in [
            ("true", HONEST),
            ("false", "ARITH_TAC"),
            ("false", "REWRITE_TAC[]"),
            ("false", "SIMP_TAC[]"),
        ]
    )


EXPECTED = (Verdict.OK, Verdict.FAIL, Verdict.FAIL, Verdict.FAIL)


@pytest.fixture(scope="module")
def victim(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    proc = with_context(hol_base, HEADER)
    assert proc.add_goal("true", TRUE_GOAL) is None
    assert proc.add_goal("false", FALSE_GOAL) is None
    yield proc
    proc.close()


@pytest.fixture(scope="module")
def clean(victim: WarmProcess) -> str:
    """The victim's fingerprint before any attack (the same when read again)."""
    first = victim.eval_string(FINGERPRINT)
    assert victim.eval_string(FINGERPRINT) == first
    return first


def test_every_attack_changes_the_process_it_runs_in(victim: WarmProcess, clean: str) -> None:
    """So that the tests below can fail: each attack, run as proofeval's own code in a
    copy of the victims' context, changes that copy's fingerprint."""
    for name, code in ATTACKS.items():
        copy = victim.clone()
        try:
            copy.eval_string(f'(ignore ({code}); "")')
            assert copy.eval_string(FINGERPRINT) != clean, name
        finally:
            copy.close()


# --- (a) statements ---------------------------------------------------------------------


def test_statements_that_change_state_are_refused_and_change_nothing(
    victim: WarmProcess, clean: str
) -> None:
    for name, code in ATTACKS.items():
        why = victim.add_goal(f"statement {name}", f"(ignore ({code}); {FALSE_GOAL})")
        assert why is not None and "one HOL term in backquotes" in why, (name, why)
    assert victim.eval_string(FINGERPRINT) == clean
    assert verdicts(victim) == EXPECTED


# --- (c) answers ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_answer_that_changes_state_changes_no_later_goal_or_verdict(
    victim: WarmProcess, clean: str, name: str
) -> None:
    # the attack, then a tactic that would profit from it in the same attempt
    answer = f"(ignore ({ATTACKS[name]}); REWRITE_TAC[])"
    out = victim.check("false", answer, 30.0, 4096)
    assert out.verdict in (Verdict.FAIL, Verdict.CHEATING), out
    assert victim.eval_string(FINGERPRINT) == clean
    assert verdicts(victim) == EXPECTED
    # a goal registered after the attack parses as it would have before
    assert victim.add_goal(f"late {name}", FALSE_GOAL) is None
    assert victim.check(f"late {name}", "ARITH_TAC", 30.0, 4096).verdict == Verdict.FAIL


def test_a_proof_state_step_that_changes_state_changes_no_other_step(
    hol_base: WarmProcess,
) -> None:
    from proofeval.api import Checker, problem
    from proofeval.scale.sessions import States
    from proofeval.states import StepError

    checker = Checker(CheckSettings(workers=1), warm={"hol-light": hol_base})
    with checker, States(checker) as states, states.session() as session:
        root = session.start(problem("hol-light", FALSE_GOAL, header=HEADER))
        shown = list(root.goals)
        for name in sorted(ATTACKS):
            step = session.apply(root, f"(ignore ({ATTACKS[name]}); ALL_TAC)", timeout=30.0)
            assert isinstance(step, StepError) or not step.solved, (name, step)
        fresh = session.start(problem("hol-light", FALSE_GOAL, header=HEADER))
        assert list(fresh.goals) == shown
        assert isinstance(session.apply(fresh, "ARITH_TAC"), StepError)


# --- (b) the header of another client, and all three through the service ----------------


def item(statement: str, proof: str, header: str) -> dict:
    given = {"prover": "hol-light", "statement": statement, "header": header}
    return {"problem": given, "proof": proof}


def test_other_clients_cannot_change_a_shared_context_through_the_service(
    hol_base: WarmProcess, clean: str
) -> None:
    """Client A sends, against the victims' header: a header that is theirs plus every
    attack (so it shares their prefix), statements that are the attacks, and answers that
    are. Client B's problems (of the victims' header, one of them new after the attacks)
    keep their verdicts, and the core every context forks from keeps its state."""
    victims = [
        item(TRUE_GOAL, HONEST, HEADER),
        item(FALSE_GOAL, "ARITH_TAC", HEADER),
        item(FALSE_GOAL, "REWRITE_TAC[]", HEADER),
        item(FALSE_GOAL, "SIMP_TAC[]", HEADER),
    ]
    # every attack (one that the others made fail is tried all the same: each alone is
    # shown to work above)
    attacker = HEADER + "".join(
        f"let _ = try ignore ({c}) with _ -> ();;\n" for c in ATTACKS.values()
    )
    attacks = [item(FALSE_GOAL, "REWRITE_TAC[]", attacker)]  # the attacker's own context
    attacks += [
        item(f"(ignore ({c}); {FALSE_GOAL})", "ARITH_TAC", HEADER) for c in ATTACKS.values()
    ]
    attacks += [
        item(FALSE_GOAL, f"(ignore ({c}); REWRITE_TAC[])", HEADER) for c in ATTACKS.values()
    ]
    core_before = hol_base.eval_string(FINGERPRINT)
    late = item("`2 + 2 = 5`", "ARITH_TAC", HEADER)
    settings = CheckSettings(workers=2)
    with (
        # the rule for clients' headers off (it refuses the attacker's): this is the layer
        # beneath it, a header that runs as code (tests/test_hol_client_headers.py)
        serving(hol_base, settings=settings, client_header_code=True) as service,
        CheckClient(service.url, TOKEN) as a,
        CheckClient(service.url, TOKEN) as b,
    ):
        first = b.check(victims)
        attacked = a.check(attacks)
        after = b.check([*victims, late])
    expected = [Verdict.OK, Verdict.FAIL, Verdict.FAIL, Verdict.FAIL]
    assert [o.verdict for o in first] == expected, first
    assert [o.verdict for o in after] == [*expected, Verdict.FAIL], after
    # the attacks were live where they ran: in the attacker's own context the same
    # statement no longer parses (`+` is no longer infix there)
    assert (attacked[0].verdict, attacked[0].stage) == (Verdict.ERROR, Stage.PRECHECK)
    assert "does not parse as a formula" in attacked[0].message, attacked[0]
    statements = attacked[1 : 1 + len(ATTACKS)]
    assert all((o.verdict, o.stage) == (Verdict.ERROR, Stage.PRECHECK) for o in statements)
    answers = attacked[1 + len(ATTACKS) :]
    assert all(o.verdict in (Verdict.FAIL, Verdict.CHEATING) for o in answers), answers
    assert hol_base.eval_string(FINGERPRINT) == core_before
