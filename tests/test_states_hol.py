"""HOL Light proof states, on both paths (bytecode and native): goals after each tactic,
branching, finish by the ordinary checker (stored as an attempt), feedback, and the
attacks: every tactic meets the deny-list, the axiom check, the sandbox's limits and its
own wall clock; budgets hold; a state cannot reach another session's states. Real HOL
Light (the session's core)."""

from __future__ import annotations

import platform
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.api import Checker, problem
from proofeval.errors import CheckerError
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.backend import assemble as hol_light_proof
from proofeval.provers.hol_light.loaded import contexts_of
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.hol_light.states import HolLightStateFactory
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import Hypothesis, Step, StepLimits
from proofeval.scale.sessions import States
from proofeval.states import Budget, BudgetExceeded, State, StepError, UnknownState
from proofeval.states.search import Found, theorem
from proofeval.store import RunStore
from tests.conftest import FORALL, on_both_paths

hol_base, core = on_both_paths()

STATEMENT = "`!n. n + 0 = n /\\ 0 + n = n`"
SPIN = "(let rec spin (g : goal) : goalstate = spin g in spin)"
ADMIT = "let ADMIT_TAC = CHEAT_TAC;;\n"
# A context's code is trusted, so the deny-list never sees it: only the sandbox stops it.
ESCAPE = (
    "let ESCAPE_TAC : tactic = fun g ->\n"
    '  (try close_out (open_out "/var/tmp/escaped"); failwith "opened a file for writing"\n'
    '   with Sys_error why -> failwith ("refused: " ^ why));;\n'
)
LIMITS = StepLimits(30.0, 2048)


def _frame(fields: list[str]) -> str:
    """A message in the framing of proofeval_text.ml."""
    return f"{len(fields)}\n" + "".join(f"{len(f)}\n{f}" for f in fields)


# What a step's child sends back: its nonce, "done", the goals made, the goals as
# records, and each goal's fields (its text, its hypotheses' count, labels and terms, its
# conclusion). This one says the tactic left the goal `F`, under a made-up nonce.
FORGED_RESULT = _frame(
    ["0" * 32, "done", "1", "Y 1 A 626f6f6c 0\nM 2 C 46 1\nG 0 2\n", "`F`", "0", "F"]
)
# Context code is not deny-checked: it can write to the descriptor the result goes on,
# then end the child as the child ends after a result (exit status 0).
FORGE = (
    "let FORGE_TAC : tactic = fun g ->\n"
    "  for fd = 0 to 63 do\n"
    "    try ignore (Unix.write_substring (Obj.magic fd : Unix.file_descr) forged 0\n"
    "      (String.length forged)) with _ -> ()\n"
    "  done;\n"
    "  exit 0;;\n"
)


@pytest.fixture(scope="module")
def states(hol_base: WarmProcess) -> Iterator[States]:
    checker = Checker(CheckSettings(workers=1), warm={"hol-light": hol_base})
    with checker, States(checker) as opened:
        yield opened


def applied(result: State | StepError) -> State:
    assert isinstance(result, State), result
    return result


def test_goals_branching_and_finish(states: States, tmp_path) -> None:
    p = problem("hol-light", STATEMENT)
    store = RunStore(tmp_path)
    with states.session(Budget(steps=50), store=store) as session:
        root = session.start(p)
        assert root.goals == (STATEMENT.replace("!", FORALL),) and not root.solved
        split = applied(session.apply(root, "GEN_TAC THEN CONJ_TAC"))
        assert split.goals == ("`n + 0 = n`", "`0 + n = n`")
        assert split.path[-1].made == 2
        # branching: two tactics on one state, which stays as it was
        left = applied(session.apply(split, "ARITH_TAC"))
        other = applied(session.apply(split, "REWRITE_TAC[ADD_CLAUSES]"))
        assert left.goals == ("`0 + n = n`",) and other.goals == ("`0 + n = n`",)
        done = applied(session.apply(left, "ARITH_TAC"))
        assert done.solved and done.goals == ()
        finished = session.finish(done)
        assert finished.proof == "(GEN_TAC THEN CONJ_TAC) THENL [((ARITH_TAC)); ((ARITH_TAC))]"
        assert finished.outcome.verdict is Verdict.OK, finished.outcome
        assert finished.feedback is None
    [result] = store.results()
    assert (result.problem_id, result.attempt, result.verdict) == (p.id, 0, Verdict.OK)


def test_hypotheses_are_shown_with_their_labels(states: States) -> None:
    p = problem("hol-light", "`!a b. a < b ==> a <= b`")
    with states.session() as session:
        root = session.start(p)
        step = applied(session.apply(root, 'REPEAT GEN_TAC THEN DISCH_THEN (LABEL_TAC "lt")'))
        assert step.goals == ("  0 [`a < b`] (lt)\n`a <= b`",)
        done = applied(session.apply(step, 'USE_THEN "lt" MP_TAC THEN ARITH_TAC'))
        assert done.solved
        assert session.finish(done).outcome.verdict is Verdict.OK


def test_goals_are_structured_from_the_goalstack(states: States) -> None:
    """Each goal's hypotheses (label, term) and conclusion, each printed by HOL's printer
    from the goal's own terms; every goal with its own hypotheses."""
    p = problem("hol-light", "`!a b. a < b /\\ b < 7 ==> a <= b /\\ a < 7`")
    with states.session() as session:
        root = session.start(p)
        [goal] = root.proof.items
        assert goal.hypotheses == () and goal.text == f"`{goal.conclusion}`"
        assert goal.conclusion == f"{FORALL}a b. a < b /\\ b < 7 ==> a <= b /\\ a < 7"
        intro = 'REPEAT GEN_TAC THEN DISCH_THEN (CONJUNCTS_THEN2 (LABEL_TAC "lt") ASSUME_TAC)'
        split = applied(session.apply(root, intro + " THEN CONJ_TAC"))
        hyps = (Hypothesis("lt", "a < b"), Hypothesis("", "b < 7"))
        assert [(g.kind, g.hypotheses, g.conclusion) for g in split.proof.items] == [
            ("focused", hyps, "a <= b"),
            ("focused", hyps, "a < 7"),
        ]
        assert split.goals[1] == "  0 [`a < b`] (lt)\n  1 [`b < 7`]\n`a < 7`"
        assert split.proof.messages == () and not split.proof.complete
        one = applied(session.apply(split, "ASM_ARITH_TAC"))
        assert one.proof.items[0].id == split.proof.items[1].id != split.proof.items[0].id
        shown = one.as_dict()["proof_state"]
        assert shown["goals"][0]["hypotheses"] == [
            {"name": "lt", "type": "a < b"},
            {"name": "", "type": "b < 7"},
        ]
        assert applied(session.apply(one, "ASM_ARITH_TAC")).as_dict()["proof_state"] == {
            "goals": [], "messages": [], "complete": True,
        }  # fmt: skip


# A label is any string: this one spells the reply's framing (counts and lengths a line
# each) and the goal's text (a hypothesis line, a conclusion in backquotes).
FORGED_LABEL = "1\n3\n`F`\n0\n  0 [`F`] (x)"


def test_a_label_cannot_forge_the_goals_fields(states: States) -> None:
    label = FORGED_LABEL.replace("\n", "\\n")
    p = problem("hol-light", "`!a. a < 1 ==> a = 0`")
    with states.session() as session:
        root = session.start(p)
        step = applied(session.apply(root, f'GEN_TAC THEN DISCH_THEN (LABEL_TAC "{label}")'))
        [goal] = step.proof.items
        assert goal.hypotheses == (Hypothesis(FORGED_LABEL, "a < 1"),)
        assert goal.conclusion == "a = 0"


def test_an_error_leaves_the_state_and_a_fail_carries_goals(states: States) -> None:
    with states.session() as session:
        root = session.start(problem("hol-light", STATEMENT))
        failed = session.apply(root, "ACCEPT_TAC TRUTH")
        assert isinstance(failed, StepError) and failed.state == root
        assert (failed.outcome.verdict, failed.outcome.stage) == (Verdict.FAIL, Stage.CHECK)
        assert "ACCEPT_TAC" in failed.outcome.message
        half = applied(session.apply(root, "GEN_TAC THEN CONJ_TAC"))
        finished = session.finish(half)
        assert finished.outcome.verdict is Verdict.FAIL
        assert finished.proof == "(GEN_TAC THEN CONJ_TAC) THENL [(ALL_TAC); (ALL_TAC)]"
        assert finished.feedback is not None
        assert finished.feedback.goals == ("`n + 0 = n`", "`0 + n = n`")
        one = applied(session.apply(half, "ARITH_TAC"))
        none = applied(session.apply(one, "ARITH_TAC"))
        no_goal = session.apply(none, "ALL_TAC")
        assert isinstance(no_goal, StepError) and "no goals" in no_goal.outcome.message


@pytest.mark.parametrize(
    ("tactic", "verdict", "stage"),
    [
        ('(Sys.command "touch /tmp/pwned"; ALL_TAC)', Verdict.CHEATING, Stage.PRECHECK),
        ("(Obj.magic 0 : tactic)", Verdict.CHEATING, Stage.PRECHECK),
        ('(ignore (open_out "/var/tmp/x"); ALL_TAC)', Verdict.CHEATING, Stage.PRECHECK),
        ("(ignore (new_axiom `F`); ALL_TAC)", Verdict.CHEATING, Stage.PRECHECK),
        ("CHEAT_TAC", Verdict.CHEATING, Stage.PRECHECK),
        ("ALL_TAC;; let x = 1", Verdict.ERROR, Stage.PRECHECK),
        ("1 + 1", Verdict.ERROR, Stage.PRECHECK),
        ("Proofeval_goals.apply", Verdict.CHEATING, Stage.PRECHECK),
    ],
)
def test_every_tactic_meets_the_deny_list(states: States, tactic: str, verdict, stage) -> None:
    with states.session() as session:
        root = session.start(problem("hol-light", STATEMENT))
        refused = session.apply(root, tactic)
        assert isinstance(refused, StepError), tactic
        assert (refused.outcome.verdict, refused.outcome.stage) == (verdict, stage), refused
        assert applied(session.apply(root, "GEN_TAC")).goals  # the state is still usable


def test_an_alias_of_cheat_tac_is_caught_by_the_axioms(states: States) -> None:
    with states.session() as session:
        root = session.start(problem("hol-light", STATEMENT, header=ADMIT))
        cheated = session.apply(root, "ADMIT_TAC")
        assert isinstance(cheated, StepError)
        assert (cheated.outcome.verdict, cheated.outcome.stage) == (Verdict.CHEATING, Stage.CHECK)


def test_a_step_runs_under_the_attempts_limits(states: States) -> None:
    with states.session(Budget(step_timeout=2.0, memory_mb=1200)) as session:
        root = session.start(problem("hol-light", STATEMENT))
        spun = session.apply(root, SPIN)
        assert isinstance(spun, StepError) and spun.outcome.verdict is Verdict.TIMEOUT
        hog = session.apply(root, "(ignore (Array.make 400_000_000 0); ALL_TAC)")
        assert isinstance(hog, StepError) and hog.outcome.verdict is Verdict.ERROR
        assert "memory" in hog.outcome.message
        assert applied(session.apply(root, "GEN_TAC")).goals  # the holder lives on


def test_a_contexts_own_tactic_runs_in_the_sandbox(states: States) -> None:
    with states.session() as session:
        root = session.start(problem("hol-light", STATEMENT, header=ESCAPE))
        escaped = session.apply(root, "ESCAPE_TAC")
        assert isinstance(escaped, StepError) and escaped.outcome.verdict is Verdict.FAIL
        assert "refused" in escaped.outcome.message
        assert "not permitted" in escaped.outcome.message


def test_a_result_forged_on_the_reply_channel_is_not_taken(states: States) -> None:
    forged = FORGED_RESULT.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    header = f'let forged = "{forged}";;\n' + FORGE
    with states.session() as session:
        root = session.start(problem("hol-light", STATEMENT, header=header))
        forging = session.apply(root, "FORGE_TAC")
        assert isinstance(forging, StepError), forging
        assert (forging.outcome.verdict, forging.outcome.stage) == (Verdict.ERROR, Stage.CHECK)
        assert "no valid result" in forging.outcome.message
        assert applied(session.apply(root, "GEN_TAC")).goals  # the state is as it was


def test_budgets_are_enforced(states: States) -> None:
    p = problem("hol-light", STATEMENT)
    with states.session(Budget(steps=2)) as session:
        root = session.start(p)
        one = applied(session.apply(root, "GEN_TAC"))
        applied(session.apply(one, "CONJ_TAC"))
        with pytest.raises(BudgetExceeded, match="2 steps"):
            session.apply(one, "CONJ_TAC")
    with states.session(Budget(live=2)) as session:
        root = session.start(p)
        one = applied(session.apply(root, "GEN_TAC"))
        with pytest.raises(BudgetExceeded, match="holds 2 states"):
            session.apply(one, "CONJ_TAC")
        session.release(one)
        applied(session.apply(root, "GEN_TAC"))
    with states.session(Budget(seconds=1.0, step_timeout=10.0)) as session:
        root = session.start(p)
        assert session.apply(root, SPIN).outcome.verdict is Verdict.TIMEOUT  # 1 s, not 10
        with pytest.raises(BudgetExceeded, match="seconds"):
            session.apply(root, "GEN_TAC")


def test_a_session_cannot_reach_another_sessions_states(states: States, hol_base) -> None:
    p = problem("hol-light", STATEMENT)
    with states.session() as a, states.session() as b:
        mine = a.start(p)
        b.start(p)
        for call in (lambda: b.apply(mine.id, "GEN_TAC"), lambda: b.finish(mine.id)):
            with pytest.raises(UnknownState):
                call()
    # below the session: each session's process holds only its own states
    factory = HolLightStateFactory(hol_base, CheckSettings().memory_mb)
    one, two = factory.open(p), factory.open(p)
    try:
        one.start("secret")
        with pytest.raises(CheckerError, match="no such state"):
            two.apply("secret", "next", "GEN_TAC", LIMITS)
        assert (one.count(), two.count()) == (1, 0)
        one.release("secret")
        assert one.count() == 0
    finally:
        one.close()
        two.close()
        factory.close()


def _huge_pages_available() -> bool:
    """Whether this kernel can collapse a heap into huge pages (MADV_COLLAPSE: Linux 6.1)."""
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    release = tuple(int(n) for n in re.findall(r"\d+", platform.release())[:2])
    return "[never]" not in mode and release >= (6, 1)


def test_the_warm_heap_is_shared_in_huge_pages(hol_base: WarmProcess) -> None:
    """The booted process holds its heap in huge pages (cheap forks for every step), and
    a fork collapses only what it alone maps: what it shares stays shared."""
    log = hol_base.launcher.log_path.read_text(errors="replace")
    said = re.findall(r"proofeval: (\d+) MiB of the heap in huge pages", log)
    assert said, "the booted process did not say how much of its heap it collapsed"
    if _huge_pages_available():  # the bytecode core's heap is some 380 MiB, native ~70 MiB
        assert int(said[0]) >= (10 if hol_base.launcher.native else 100), said
    factory = HolLightStateFactory(hol_base, CheckSettings().memory_mb)
    fresh = factory.open(problem("hol-light", STATEMENT))
    try:
        fresh.start("root")
        [ok, mib] = fresh.proc.state_request(["state_huge_pages"], 60.0)
        assert ok == "ok" and int(mib) <= 8, mib  # its young heap at most; not the core's
    finally:
        fresh.close()
        factory.close()


def test_search_runs_confined_and_meets_the_deny_list(states: States) -> None:
    p = problem("hol-light", STATEMENT)
    with states.session() as session:
        found = session.search(p, "`n + 0`")
        assert isinstance(found, list)  # Debian's HOL Light has no theorem database
        structured = session.search_theorems(p, "`n + 0`", limit=5)
        assert isinstance(structured, Found)
        assert structured == Found(tuple(theorem(e) for e in found[:5]), len(found) > 5)
        # a pattern is one term in backquotes: code is refused before anything runs
        denied = session.search(p, '(ignore (Sys.command "true"); `n + 0`)')
        assert isinstance(denied, StepError)
        assert (denied.outcome.verdict, denied.outcome.stage) == (Verdict.ERROR, Stage.PRECHECK)
        assert "one HOL term in backquotes, never code" in denied.outcome.message


def test_the_path_is_assembled_in_preorder() -> None:
    steps = [Step("A", 2), Step("B", 1), Step("C", 0), Step("D", 3), Step("E", 0)]
    assert hol_light_proof(steps) == (
        "(A) THENL [((B) THEN ((C))); ((D) THENL [((E)); (ALL_TAC); (ALL_TAC)])]"
    )
    assert hol_light_proof([]) == "ALL_TAC"


BOOL = "Y 1 A 626f6f6c 0\n"  # the type bool (names are in hex)
FORGED_GOALS = {
    "ill-typed": BOOL + "Y 2 A 6e756d 0\nM 3 V 78 1\nM 4 V 6e 2\nM 5 A 3 4\nG 0 5\n",
    "a constant at another type": BOOL + "Y 2 A 6e756d 0\nM 3 C 54 2\nG 0 3\n",
    "not a formula": BOOL + "Y 2 A 6e756d 0\nM 3 V 6e 2\nG 0 3\n",
    "a record twice": BOOL + "Y 1 A 626f6f6c 0\n",
    "an unknown type": "Y 1 A 6e6f5f73756368 0\nM 2 V 78 1\nG 0 2\n",
    "a later record": BOOL + "M 3 A 4 4\nM 4 C 54 1\nG 0 3\n",
}


@pytest.mark.parametrize("forged", sorted(FORGED_GOALS))
def test_goals_sent_back_are_rebuilt_through_the_kernel(core: WarmProcess, forged: str) -> None:
    """What a tactic's child sends back is untrusted: anything the kernel's constructors
    would not build is refused, never held as a state."""
    from proofeval.provers.hol_light.server import ocaml_string

    def decode(text: str) -> str:
        expr = (
            f'(try ignore (Proofeval_goals.decode 60.0 {ocaml_string(text)}); "accepted" '
            'with Failure why -> "refused: " ^ why)'
        )
        return core.eval_string(expr)

    assert decode(BOOL + "M 3 C 54 1\nG 0 3\n") == "accepted"  # `T`, well formed
    why = decode(FORGED_GOALS[forged])
    assert why.startswith("refused: record"), why
    expected = {"not a formula": "not a formula", "a record twice": "twice",
                "a later record": "no earlier term"}.get(forged, "")  # fmt: skip
    assert expected in why


def test_states_and_checks_share_one_load_of_a_header(hol_base: WarmProcess) -> None:
    """A header loaded for proof states is the template the checker's workers fork (and
    the other way round): loaded once, released when the last user lets it go. Two
    problems of one header never take each other's goal in it."""
    header = "let SHARED_PROBE = ARITH_RULE `1 + 1 = 2`;;\n"
    p = problem("hol-light", STATEMENT, header=header)
    twin = problem("hol-light", "`F`", header=header)
    settings = CheckSettings(workers=1)
    contexts = contexts_of(hol_base)
    key = (header, "", settings.memory_mb)
    checker = Checker(settings, warm={"hol-light": hol_base})
    with checker, States(checker) as states:
        with states.session() as session:
            session.start(p)
        assert contexts.users(*key) == 1  # the states' factory keeps it for later sessions
        proof = "REWRITE_TAC[ADD_CLAUSES; SHARED_PROBE]"
        [ok, fail] = checker.check([(p, proof), (twin, proof)])
        assert (ok.verdict, fail.verdict) == (Verdict.OK, Verdict.FAIL), (ok, fail)
        assert contexts.users(*key) == 2  # the checker's lane forks the same template
    assert contexts.users(*key) == 0  # both closed: the template with them
