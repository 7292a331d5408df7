"""The replaying sibling starts only when it can matter (proofeval_server.ml's
`check_replayed`): a child that has answered anything but OK within `replay_after` never
has one; one that answered OK by then is replayed after it; a longer one is replayed
beside it, its steps waiting in their pipe until the sibling starts. Every OK is still
replayed, whichever of the three it was: forgeries made after the child has run for a
while, its pipe full of honest steps, are CHEATING as quick ones are
(test_hol_provenance.py), and honest proofs on either side of the delay are OK.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from tests.conftest import on_both_paths, with_context

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

# `burn` makes honest kernel steps for about that many CPU seconds (many more than the
# steps' pipe holds), so that the sibling starts while the child runs; then a forgery of
# the goal, as in test_hol_provenance.py (code a context may run, as a bug would).
CONTEXT = r"""
let burn seconds =
  let stop = Sys.time () +. seconds in
  let rec go n = if Sys.time () < stop then (ignore (REFL (mk_var ("x", `:bool`))); go (n + 1)) in
  go 0;;
let forge (asl, c) : thm = Obj.magic (ref (asl, c));;
let justify f : tactic = fun (asl, w) -> (null_meta, [], fun _ _ -> f w);;
let SLOW_FORGED_TAC g = burn 0.3; justify (fun w -> forge ([], w)) g;;
let SLOW_FORGED_PREMISE_TAC g = burn 0.3; justify (fun w -> CONTR w (forge ([], `F`))) g;;
let SLOW_HONEST_TAC g = burn 0.3; ARITH_TAC g;;
let SLOW_FAILING_TAC g = burn 0.3; failwith "gave up";;
"""


@pytest.fixture(scope="module")
def slow(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    proc = with_context(hol_base, CONTEXT)
    for i, goal in enumerate(["`F`", "`2 + 3 = 6`", "`1 + 1 = 2`"]):
        assert proc.add_goal(f"g{i}", goal) is None
    yield proc
    proc.close()


@pytest.mark.parametrize("tactic", ["SLOW_FORGED_TAC", "SLOW_FORGED_PREMISE_TAC"])
@pytest.mark.parametrize("goal", ["g0", "g1"])
def test_a_forgery_after_a_long_run_does_not_replay(
    slow: WarmProcess, tactic: str, goal: str
) -> None:
    out = slow.check(goal, tactic, 30.0, 2048)
    assert out.verdict == Verdict.CHEATING, out
    assert "does not replay" in out.message, out


def test_a_long_honest_proof_is_ok(slow: WarmProcess) -> None:
    out = slow.check("g2", "SLOW_HONEST_TAC", 30.0, 2048)
    assert out.verdict == Verdict.OK, out
    assert out.message == "", out


@pytest.mark.parametrize("tactic", ["SLOW_FAILING_TAC", "REWRITE_TAC[]", 'FAIL_TAC "no"'])
def test_fails_long_and_quick_are_fail(slow: WarmProcess, tactic: str) -> None:
    out = slow.check("g2", tactic, 30.0, 2048)
    assert out.verdict == Verdict.FAIL, out


def test_a_quick_honest_proof_is_ok_and_replayed(slow: WarmProcess) -> None:
    """Its sibling starts after its OK: the OK is the replay's, not the child's word."""
    out = slow.check("g2", "ARITH_TAC", 30.0, 2048)
    assert out.verdict == Verdict.OK, out
    assert "not replayed" not in out.message, out


def test_a_timeout_with_its_sibling_started_is_timeout(slow: WarmProcess) -> None:
    out = slow.check("g2", "SLOW_HONEST_TAC", 0.1, 2048)
    assert out.verdict == Verdict.TIMEOUT, out
