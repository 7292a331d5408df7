"""A service's clients may send HOL Light headers that load HOL Light's own files, and
nothing else unless the service runs with --client-header-code (both paths).

The rule alone is tests/test_client_headers.py; what a header that runs code can and
cannot do once admitted (the layer beneath, with this one off) is
tests/test_hol_shared_state.py and tests/test_hol_header_processes.py."""

from __future__ import annotations

import httpx

from proofeval.client import CheckClient
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.conftest import on_both_paths
from tests.test_serve import TOKEN, serving

hol_base, core = on_both_paths()

LIBRARY = 'needs "Library/binary.ml";;\n'
CODE = 'let proofeval_client_code = Sys.command "true";;\n'
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def item(header: str, statement: str, proof: str) -> dict:
    return {"problem": {"prover": "hol-light", "statement": statement, "header": header},
            "proof": proof}  # fmt: skip


def test_a_header_of_library_loads_is_checked_and_code_is_refused(hol_base: WarmProcess) -> None:
    honest = item(LIBRARY, "`binarysum {} = 0`", "REWRITE_TAC[binarysum; NSUM_CLAUSES]")
    false = item(LIBRARY, "`binarysum {} = 1`", "REWRITE_TAC[binarysum; NSUM_CLAUSES]")
    with serving(hol_base, settings=CheckSettings(workers=1)) as service:
        with CheckClient(service.url, TOKEN) as client:
            ok, fail = client.check([honest, false])
        assert (ok.verdict, fail.verdict) == (Verdict.OK, Verdict.FAIL), (ok, fail)
        for header in (CODE, LIBRARY + CODE):
            body = {"items": [item(header, "`T`", "REWRITE_TAC[]")]}
            refused = httpx.post(f"{service.url}/check", json=body, headers=AUTH, timeout=60)
            assert refused.status_code == 422, refused.text
            assert "may only load HOL Light's own files" in refused.text
        # proof states take their problems by the same rule
        base = f"{service.url}/states"
        sid = httpx.post(base, json={}, headers=AUTH, timeout=60).json()["session"]
        problem = item(CODE, "`T`", "")["problem"]
        start = httpx.post(f"{base}/{sid}/start", json={"problem": problem}, headers=AUTH,
                           timeout=60)  # fmt: skip
        assert start.status_code == 422 and "HOL Light's own files" in start.text


def test_with_client_header_code_a_header_runs_as_code(hol_base: WarmProcess) -> None:
    defined = item(CODE, "`T`", "REWRITE_TAC[]")  # refused (422) were the rule on
    with serving(hol_base, settings=CheckSettings(workers=1), client_header_code=True) as s:
        with CheckClient(s.url, TOKEN) as client:
            (out,) = client.check([defined])
    assert out.verdict == Verdict.OK, out
