"""Proof states over the service's HTTP routes: a real uvicorn, real coqtop and HOL Light.
An HTTP session walks a Coq and a HOL Light proof with hypotheses, bullets and a failed
step; every route is also called wrongly on purpose. Every reply, answer or error, is
validated with jsonschema against the service's own /openapi.json. Sessions are
capabilities: another session's id or state id reaches nothing; the token is required."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.conftest import FORALL
from tests.test_serve import TOKEN, serving

pytestmark = pytest.mark.service

HEADER = "Require Import Arith Lia."
COQ = {"prover": "coq", "header": HEADER,
       "statement": "Theorem swap : forall P Q : Prop, P /\\ Q -> Q /\\ P."}  # fmt: skip
HOL = {"prover": "hol-light", "statement": "`!p q. p /\\ q ==> q /\\ p`"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Api:
    """The service's routes, each reply checked against its status and the schema that
    /openapi.json publishes for that route and status."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.openapi = httpx.get(f"{url}/openapi.json", timeout=30).json()

    def schema(self, route: str, method: str, status: int) -> dict:
        """The route's reply schema, resolved within the OpenAPI document."""
        found = self.openapi["paths"].get(route, {}).get(method)
        if found is None:  # no such route or method: FastAPI's own 404 or 405
            ref = "#/components/schemas/ErrorReply"
        else:
            reply = found["responses"][str(status)]
            ref = reply["content"]["application/json"]["schema"]["$ref"]
        return {"$ref": ref, "components": self.openapi["components"]}

    def __call__(
        self, method: str, route: str, body: Any = None, status: int = 200, auth: dict = AUTH,
        **names: str,
    ) -> dict:  # fmt: skip
        reply = httpx.request(method, self.url + route.format(**names), json=body,
                              headers=auth, timeout=120)  # fmt: skip
        assert reply.status_code == status, reply.text
        data = reply.json()
        jsonschema.validate(data, self.schema(route, method.lower(), status))
        if status >= 400:
            assert set(data) == {"error"} and set(data["error"]) == {"code", "message",
                                                                    "details"}  # fmt: skip
        return data


def walk(api: Api, problem: dict, steps: dict[str, str]) -> dict:
    """Open a session and walk `problem`: intro, split, a wrong step, a cheat, both
    branches; finish half-way and at the end; search; release. The replies by name."""
    seen: dict = {"session": api("POST", "/states", {"budget": {"steps": 8}})}
    sid = seen["session"]["session"]

    def step(state: dict, tactic: str) -> dict:
        body = {"state_id": state["id"], "tactic": tactic}
        return api("POST", "/states/{sid}/apply", body, sid=sid)

    root = seen["root"] = api("POST", "/states/{sid}/start", {"problem": problem}, sid=sid)
    intro = seen["intro"] = step(root, steps["intro"])
    split = seen["split"] = step(intro, steps["split"])
    seen["wrong"] = step(split, steps["wrong"])
    seen["cheat"] = step(split, steps["cheat"])
    seen["half"] = api("POST", "/states/{sid}/finish", {"state_id": split["id"]}, sid=sid)
    first = seen["first"] = step(split, steps["first"])
    seen["done"] = step(first, steps["second"])
    seen["finished"] = api("POST", "/states/{sid}/finish", {"state_id": seen["done"]["id"]},
                           sid=sid)  # fmt: skip
    seen["search"] = api("POST", "/states/{sid}/search",
                         {"problem": problem, "pattern": steps["search"], "limit": 3},
                         sid=sid)  # fmt: skip
    seen["released"] = api("POST", "/states/{sid}/release", {"state_id": intro["id"]}, sid=sid)
    return seen


def common(seen: dict) -> None:
    """What both provers' walks show alike."""
    root, split, wrong = seen["root"], seen["split"], seen["wrong"]
    assert root["steps"] == [] and root["solved"] is False and len(root["goals"]) == 1
    assert "error" not in seen["intro"] and "error" not in split
    assert len(split["goals"]) == 2
    # a refused step answers the state it was applied to, unchanged, and why
    assert (wrong["id"], wrong["goals"]) == (split["id"], split["goals"])
    assert wrong["error"]["verdict"] == "FAIL" and wrong["error"]["state"] == split["id"]
    assert seen["cheat"]["error"]["verdict"] == "CHEATING"
    assert seen["half"]["verdict"] == "FAIL" and len(seen["half"]["feedback"]["goals"]) == 2
    assert seen["done"]["solved"] is True and len(seen["done"]["steps"]) == 4
    finished = seen["finished"]
    assert finished["verdict"] == "OK" and "feedback" not in finished
    assert finished["seconds"] == round(finished["seconds"], 3)
    assert seen["search"]["theorems"] and "error" not in seen["search"]
    assert seen["released"] == {"released": seen["intro"]["id"]}


@pytest.mark.coq
def test_a_coq_proof_over_http_and_every_route_called_wrongly() -> None:
    steps = {"intro": "intros P Q [HP HQ].", "split": "split.", "wrong": "- exact HP.",
             "cheat": "admit.", "first": "- exact HQ.", "second": "- exact HP.",
             "search": "(_ + 0 = _)"}  # fmt: skip
    with serving(None, provers=("coq",)) as service:
        api = Api(service.url)
        seen = walk(api, COQ, steps)
        common(seen)
        assert "HP : P" in seen["intro"]["goals"][0] and "HQ : Q" in seen["split"]["goals"][1]
        assert seen["finished"]["proof"] == "\n".join(seen["done"]["steps"])
        assert any(t["name"].endswith("add_0_r") for t in seen["search"]["theorems"])
        refusals(api, seen)
        check_route(api)


def refusals(api: Api, seen: dict) -> None:
    """Each route called wrongly: the status, and the code a client branches on."""
    sid = seen["session"]["session"]
    done = seen["done"]["id"]
    other = api("POST", "/states", {})["session"]

    def code(*args: Any, status: int, **names: str) -> str:
        return api(*args, status=status, **names)["error"]["code"]

    assert code("POST", "/states", {}, status=401, auth={}) == "unauthorized"
    assert code("POST", "/states", {"budget": {"steps": 0}}, status=422) == "invalid_request"
    bad = api("POST", "/states/{sid}/start", {"problem": {"prover": "coq"}}, 422, sid=sid)
    assert bad["error"]["details"][0]["loc"] == ["statement"]  # data, not a string
    assert code("POST", "/states/{sid}/start", {"problem": COQ}, status=404,
                sid="nosuchsession") == "unknown_session"  # fmt: skip
    assert code("POST", "/states/{sid}/start", {"problem": "nope"}, status=422,
                sid=sid) == "unknown_problem"  # fmt: skip
    # the old name of the field is refused, with what is wrong
    old = api("POST", "/states/{sid}/apply", {"state": done, "tactic": "idtac."}, 422, sid=sid)
    assert {"state_id", "state"} <= {d["loc"][0] for d in old["error"]["details"]}
    # another session's state is no state of this one
    assert code("POST", "/states/{sid}/apply", {"state_id": done, "tactic": "idtac."},
                status=404, sid=other) == "unknown_state"  # fmt: skip
    assert code("POST", "/states/{sid}/release", {"state_id": seen["intro"]["id"]},
                status=404, sid=sid) == "unknown_state"  # released already  # fmt: skip
    assert code("POST", "/states/{sid}/finish", {"state_id": "deadbeef"}, status=404,
                sid=sid) == "unknown_state"  # fmt: skip
    assert code("POST", "/states/{sid}/search", {"problem": {"prover": 1}, "pattern": "_"},
                status=422, sid=sid) == "invalid_request"  # fmt: skip
    # 7 of the budget's 8 steps are spent: one more, then none
    api("POST", "/states/{sid}/apply", {"state_id": done, "tactic": "idtac."}, sid=sid)
    spent = api("POST", "/states/{sid}/apply", {"state_id": done, "tactic": "idtac."}, 409,
                sid=sid)  # fmt: skip
    assert spent["error"]["code"] == "budget_spent" and "8 steps" in spent["error"]["message"]
    assert api("DELETE", "/states/{sid}", sid=sid) == {"closed": sid}
    assert code("DELETE", "/states/{sid}", status=404, sid=sid) == "unknown_session"
    assert code("GET", "/states/{sid}/start", status=405, sid=other) == "method_not_allowed"
    assert code("GET", "/nowhere", status=404) == "not_found"


def check_route(api: Api) -> None:
    """/check answers with the same verdict shape, and refuses in the same error shape."""
    items = [{"problem": COQ, "proof": "intros P Q [HP HQ]. split. - exact HP. - exact HQ."},
             {"problem": COQ, "proof": "intros P Q [HP HQ]. split; assumption."}]  # fmt: skip
    checked = api("POST", "/check", {"items": items, "feedback": True})
    failed, ok = checked["results"]
    assert (failed["verdict"], ok["verdict"]) == ("FAIL", "OK") and "feedback" not in ok
    assert failed["feedback"]["failed_tactic"] == "exact HP."
    assert all(r["seconds"] == round(r["seconds"], 3) for r in checked["results"])
    bad = api("POST", "/check", {"items": [{"proof": 1}]}, status=422)
    assert isinstance(bad["error"]["details"], list)  # a list of errors, not a JSON string
    assert {tuple(d["loc"]) for d in bad["error"]["details"]} >= {("items", "0", "problem")}
    unknown = api("POST", "/check", {"items": [{"problem": "nope", "proof": "x"}]}, 422)
    assert unknown["error"]["code"] == "unknown_problem"
    assert unknown["error"]["details"] == {"item": 0}
    assert api("POST", "/check", {"items": []}, status=401, auth={})["error"]["code"] == (
        "unauthorized"
    )
    assert api("GET", "/check", status=405)["error"]["code"] == "method_not_allowed"
    health = api("GET", "/health")
    assert health["status"] == "ready" and health["provers"]["coq"]["status"] == "ready"


@pytest.mark.hol
def test_a_hol_light_proof_over_http(hol_base: WarmProcess) -> None:
    steps = {"intro": "REPEAT GEN_TAC THEN STRIP_TAC", "split": "CONJ_TAC",
             "wrong": "ACCEPT_TAC TRUTH", "cheat": "CHEAT_TAC",
             "first": "FIRST_ASSUM ACCEPT_TAC", "second": "FIRST_ASSUM ACCEPT_TAC",
             "search": "`x /\\ y`"}  # fmt: skip
    with serving(hol_base, settings=CheckSettings(workers=1), provers=("hol-light",)) as s:
        seen = walk(Api(s.url), HOL, steps)
    common(seen)
    assert seen["root"]["goals"] == [f"`{FORALL}p q. p /\\ q ==> q /\\ p`"]
    [stripped] = seen["intro"]["goals"]
    assert "`p`" in stripped and "`q`" in stripped and stripped.endswith("`q /\\ p`")
    assert seen["finished"]["proof"].startswith("(REPEAT GEN_TAC THEN STRIP_TAC)")
