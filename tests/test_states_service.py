"""Proof states over the service's HTTP routes: a real uvicorn, real coqtop. Sessions are
capabilities: another session's id or state id reaches nothing; the token is required;
budgets answer 409."""

from __future__ import annotations

import httpx
import pytest

from tests.test_serve import TOKEN, serving

pytestmark = [pytest.mark.service, pytest.mark.coq]

HEADER = "Require Import Arith Lia."
PROBLEM = {"prover": "coq", "header": HEADER,
           "statement": "Theorem both : forall n : nat, n + 0 = n /\\ 0 + n = n."}  # fmt: skip
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def post(url: str, body: dict, auth: dict = AUTH) -> httpx.Response:
    return httpx.post(url, json=body, headers=auth, timeout=120)


def test_states_over_http() -> None:
    with serving(None, provers=("coq",)) as service:
        base = f"{service.url}/states"
        assert post(base, {}, auth={}).status_code == 401
        sid = post(base, {"budget": {"steps": 3}}).json()["session"]
        other = post(base, {}).json()["session"]
        root = post(f"{base}/{sid}/start", {"problem": PROBLEM}).json()["state"]
        assert "n + 0 = n /\\ 0 + n = n" in root["goals"][0]
        split = post(f"{base}/{sid}/apply", {"state": root["id"], "tactic": "intros n. split."})
        split = split.json()["state"]
        assert len(split["goals"]) == 2
        bad = post(f"{base}/{sid}/apply", {"state": split["id"], "tactic": "admit."}).json()
        assert bad["error"]["verdict"] == "CHEATING" and len(bad["goals"]) == 2
        half = post(f"{base}/{sid}/finish", {"state": split["id"]}).json()
        assert half["verdict"] == "FAIL" and len(half["feedback"]["goals"]) == 2
        done = post(f"{base}/{sid}/apply", {"state": split["id"], "tactic": "all: lia."})
        done = done.json()["state"]
        finished = post(f"{base}/{sid}/finish", {"state": done["id"]}).json()
        assert (finished["verdict"], finished["proof"]) == ("OK", "intros n. split.\nall: lia.")
        # the budget of 3 steps is spent; another session cannot name these states
        over = post(f"{base}/{sid}/apply", {"state": done["id"], "tactic": "idtac."})
        assert over.status_code == 409 and "3 steps" in over.json()["detail"]
        stolen = post(f"{base}/{other}/apply", {"state": split["id"], "tactic": "all: lia."})
        assert stolen.status_code == 409 and "no state" in stolen.json()["detail"]
        assert post(f"{base}/nosuchsession/start", {"problem": PROBLEM}).status_code == 404
        bad_problem = post(f"{base}/{sid}/start", {"problem": {"prover": "lean"}})
        assert bad_problem.status_code == 422
        # /check gives a FAIL's feedback when asked: the failing sentence and its goals
        items = [{"problem": PROBLEM, "proof": "intros n. split. - lia. - exact I."},
                 {"problem": PROBLEM, "proof": "intros n. split; lia."}]  # fmt: skip
        checked = post(f"{service.url}/check", {"items": items, "feedback": True}).json()
        failed, ok = checked["results"]
        assert (failed["verdict"], ok["verdict"]) == ("FAIL", "OK") and "feedback" not in ok
        assert failed["feedback"]["failed_step"] == 5
        assert failed["feedback"]["failed_tactic"] == "exact I."
        assert "0 + n = n" in failed["feedback"]["goals"][0]
        plain = post(f"{service.url}/check", {"items": items[:1]}).json()["results"][0]
        assert "feedback" not in plain
        closed = httpx.delete(f"{base}/{sid}", headers=AUTH, timeout=60)
        assert closed.json() == {"closed": sid}
        assert post(f"{base}/{sid}/finish", {"state": done["id"]}).status_code == 404
