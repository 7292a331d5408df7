"""proofeval serve: a real uvicorn on a loopback port, real HTTP through CheckClient, real
HOL Light (the session's core) and Coq. Verdicts equal `proofeval check`'s; the limits,
the token, the queue bound, disconnection and SIGTERM are attacked."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from proofeval.api import Checker
from proofeval.cli import main
from proofeval.client import CheckClient
from proofeval.errors import CheckerError
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check
from proofeval.scale.service.app import ServiceConfig
from proofeval.scale.service.server import make_server
from tests.test_api import ANSWERS, COQ_SPIN, HOL_SPIN, PROBLEMS, scratch_named, write_jsonl

pytestmark = [pytest.mark.service, pytest.mark.hol, pytest.mark.coq]

TOKEN = "a-test-token-of-some-length"
BOTH = ("coq", "hol-light")


class Service:
    def __init__(self, url: str) -> None:
        self.url = url
        self.auth = {"Authorization": f"Bearer {TOKEN}"}

    def post(self, body: object, **kw) -> httpx.Response:
        headers = {**self.auth, **kw.pop("headers", {})}
        timeout = kw.pop("timeout", 120)
        return httpx.post(f"{self.url}/check", json=body, headers=headers, timeout=timeout, **kw)

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", headers=self.auth).text


@contextmanager
def serving(
    hol_base: WarmProcess | None, workers: int = 2, settings: CheckSettings | None = None, **kw
) -> Iterator[Service]:
    """A real uvicorn on a free loopback port, in a thread, over a Checker of its own,
    made as `proofeval serve` makes it."""
    warm = {"hol-light": hol_base} if hol_base is not None else None
    checker = Checker(settings or CheckSettings(workers=workers), warm=warm)
    config = ServiceConfig(**{"token": TOKEN, "provers": BOTH, **kw})
    server = make_server(checker, config, "127.0.0.1", 0, log_level="warning")
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Service(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(60)


def item(problem: dict, proof: str) -> dict:
    given = {k: problem[k] for k in ("prover", "statement", "header", "timeout") if k in problem}
    return {"problem": given, "proof": proof}


def test_verdicts_through_the_service_equal_proofeval_check(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    answers = [{"problem_id": p, "answer": a} for p, a, _ in ANSWERS]
    opts = CheckOptions(
        problems=write_jsonl(tmp_path / "problems.jsonl", PROBLEMS),
        answers=write_jsonl(tmp_path / "answers.jsonl", answers),
        out=tmp_path / "run",
        settings=CheckSettings(workers=2),
    )
    rows = {(r.problem_id, r.attempt): r for r in run_check(opts, warm={"hol-light": hol_base})}
    counts: dict[str, int] = {}
    expected = []
    for pid, _, _ in ANSWERS:
        row = rows[(pid, counts.setdefault(pid, 0))]
        counts[pid] += 1
        expected.append((row.verdict, row.stage, scratch_named(row.message)))
    by_id = {p["id"]: p for p in PROBLEMS}
    # `check` runs a benchmark's headers as code: so must the service, to compare
    with (
        serving(hol_base, client_header_code=True) as service,
        CheckClient(service.url, TOKEN) as client,
    ):
        outcomes = client.check([item(by_id[pid], proof) for pid, proof, _ in ANSWERS])
    assert [(o.verdict, o.stage, scratch_named(o.message)) for o in outcomes] == expected
    assert {o.verdict.value for o in outcomes} == {"OK", "FAIL", "CHEATING", "TIMEOUT", "ERROR"}


def test_bench_problems_by_id_with_their_timeouts(hol_base: WarmProcess, tmp_path: Path) -> None:
    bench = {p["id"]: p for p in PROBLEMS}
    problems = {"hol.add_0": bench["hol.add_0"], "hol.spin": bench["hol.spin"]}
    with serving(hol_base, bench=from_jsonl(tmp_path, problems.values()), bench_only=True) as s:
        reply = s.post(
            {
                "items": [
                    {"problem": "hol.add_0", "proof": "ARITH_TAC"},
                    {"problem": "hol.spin", "proof": HOL_SPIN},
                ]
            }  # fmt: skip
        )
        assert [r["verdict"] for r in reply.json()["results"]] == ["OK", "TIMEOUT"]
        assert 2.5 < reply.json()["results"][1]["seconds"] < 10  # the benchmark's 3 s
        unknown = s.post({"items": [{"problem": "nope", "proof": "ARITH_TAC"}]})
        assert unknown.status_code == 422 and "no problem 'nope'" in unknown.text
        inline = s.post({"items": [item(bench["hol.add_0"], "ARITH_TAC")]})
        assert inline.status_code == 422 and "only its benchmark" in inline.text


def from_jsonl(tmp_path: Path, rows) -> dict:
    from proofeval.loaders import load_benchmark

    path = write_jsonl(tmp_path / "bench.jsonl", list(rows))
    return {p.id: p for p in load_benchmark(path).problems}


def test_requests_without_the_token_are_refused(hol_base: WarmProcess) -> None:
    body = {"items": [item(PROBLEMS[0], "ARITH_TAC")]}
    with serving(hol_base) as s:
        assert httpx.post(f"{s.url}/check", json=body).status_code == 401
        for wrong in ("Bearer nope", f"Bearer {TOKEN}x", TOKEN, f"bearer {TOKEN}", ""):
            reply = httpx.post(f"{s.url}/check", json=body, headers={"Authorization": wrong})
            assert reply.status_code == 401, wrong
        assert httpx.get(f"{s.url}/metrics").status_code == 401
        assert httpx.get(f"{s.url}/health").status_code == 200  # probes need no token
        with pytest.raises(CheckerError, match="401"):
            CheckClient(s.url, "wrong-token").check(body["items"])
        assert s.post(body).json()["results"][0]["verdict"] == "OK"
        assert 'proofeval_requests_refused_total{status="401"} 8' in s.metrics()


def test_oversize_and_malformed_requests_are_refused(hol_base: WarmProcess) -> None:
    with serving(hol_base, max_body_bytes=4096, max_batch=3, max_timeout=30) as s:
        big = s.post({"items": [item(PROBLEMS[0], "ARITH_TAC" + " " * 5000)]})
        assert big.status_code == 413 and "larger than 4096 bytes" in big.text

        def chunks():  # no Content-Length: the limit holds while reading
            for _ in range(100):
                yield b" " * 1000

        streamed = httpx.post(f"{s.url}/check", content=chunks(), headers=s.auth)
        assert streamed.status_code == 413
        many = s.post({"items": [item(PROBLEMS[0], "ARITH_TAC")] * 4})
        assert many.status_code == 422 and "at most 3 items" in many.text
        for body in (
            {"items": [{"problem": {"prover": "coq", "statement": "x"}}]},
            {"items": [item({**PROBLEMS[0], "timeout": 31}, "ARITH_TAC")]},
            {"items": [], "timeout": 1000},
            {"items": [item(PROBLEMS[0], "ARITH_TAC")], "extra": 1},
            [],
        ):
            assert s.post(body).status_code == 422, body
        garbage = httpx.post(f"{s.url}/check", content=b"{not json", headers=s.auth)
        assert garbage.status_code == 422
        # a prover proofeval cannot check is that item's ERROR, never the request's refusal
        misspelt = [
            {"problem": {"prover": name, "statement": "x"}, "proof": "p"}
            for name in ("lean4", "hol_light", "Coq")
        ]
        answered = s.post({"items": misspelt})
        assert answered.status_code == 200, answered.text
        results = answered.json()["results"]
        assert [r["verdict"] for r in results] == ["ERROR"] * 3
        assert "no checker for prover 'lean4'" in results[0]["message"]
        assert "did you mean hol-light?" in results[1]["message"]
        assert "did you mean coq?" in results[2]["message"]


def test_a_full_queue_answers_429_and_the_client_retries(hol_base: WarmProcess) -> None:
    spin = {"problem": {"prover": "hol-light", "statement": "`T`"}, "proof": HOL_SPIN}
    quick = {"problem": {"prover": "hol-light", "statement": "`T`"}, "proof": "ACCEPT_TAC TRUTH"}
    with serving(hol_base, workers=1, max_queue=3, retry_after=1) as s:
        slow = threading.Thread(target=s.post, args=({"items": [spin] * 3, "timeout": 2},))
        slow.start()  # one running, two waiting
        time.sleep(1.0)
        full = s.post({"items": [quick] * 2})
        assert full.status_code == 429 and full.headers["Retry-After"] == "1"
        with CheckClient(s.url, TOKEN) as client:
            outcomes = client.check([quick] * 2)  # retried until the queue has room
        slow.join()
        assert [o.verdict for o in outcomes] == [Verdict.OK] * 2
        assert re.search(r'proofeval_requests_refused_total\{status="429"\} [2-9]', s.metrics())


def test_a_client_that_goes_away_cancels_its_pending_attempts(hol_base: WarmProcess) -> None:
    spin = {"problem": {"prover": "hol-light", "statement": "`T`"}, "proof": HOL_SPIN}
    with serving(hol_base, workers=1) as s:
        with pytest.raises(httpx.ReadTimeout):
            s.post({"items": [spin] * 6, "timeout": 3}, timeout=1.0)
        start = time.monotonic()
        assert s.post({"items": [item(PROBLEMS[0], "ARITH_TAC")]}).status_code == 200
        assert time.monotonic() - start < 6  # not behind five more 3-second attempts
        assert "proofeval_queue_depth 0" in s.metrics()


def test_health_and_metrics(hol_base: WarmProcess) -> None:
    with serving(hol_base) as s:
        deadline = time.monotonic() + 60
        while (health := httpx.get(f"{s.url}/health").json())["status"] == "starting":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert (health["status"], health["contexts"]) == ("ready", {})
        assert {p: v["status"] for p, v in health["provers"].items()} == dict.fromkeys(
            BOTH, "ready"
        )
        s.post({"items": [item(PROBLEMS[0], "ARITH_TAC"), item(PROBLEMS[0], "REWRITE_TAC[]")]})
        text = s.metrics()
    for line in (
        'proofeval_attempts_total{verdict="OK"} 1',
        'proofeval_attempts_total{verdict="FAIL"} 1',
        'proofeval_request_seconds_bucket{le="+Inf"} 1',
        "proofeval_attempt_seconds_count 2",
        "proofeval_queue_depth 0",
        "proofeval_warm_contexts 1",
    ):
        assert line in text.splitlines(), line
    assert re.search(r"^proofeval_prover_memory_bytes \d", text, re.M)


def test_health_is_not_ready_when_a_prover_cannot_start(tmp_path: Path) -> None:
    settings = CheckSettings(hol_dir=tmp_path / "no-hol-light")
    with serving(None, settings=settings, provers=("hol-light",)) as s:
        deadline = time.monotonic() + 30
        while (reply := httpx.get(f"{s.url}/health")).json()["status"] == "starting":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert reply.status_code == 503
        assert "no-hol-light" in json.dumps(reply.json()["reasons"])
        # its attempts are ERRORs with the reason, never a lost request
        [out] = CheckClient(s.url, TOKEN).check([item(PROBLEMS[0], "ARITH_TAC")])
        assert out.verdict == Verdict.ERROR and "no-hol-light" in out.message


@pytest.mark.coq
def test_health_says_which_provers_and_contexts_are_ready(tmp_path: Path) -> None:
    """--bench's contexts load as the service starts; /health is 503 until they have,
    then says how each went (a header that does not load is its problems' ERROR, not the
    service's failure)."""
    by_id = {p["id"]: p for p in PROBLEMS}
    bench = from_jsonl(tmp_path, [by_id["coq.add_0"], by_id["coq.broken"]])
    with serving(None, provers=("coq",), bench=bench) as s:
        deadline = time.monotonic() + 120
        while (reply := httpx.get(f"{s.url}/health")).json()["status"] == "starting":
            assert reply.status_code == 503 and time.monotonic() < deadline
            time.sleep(0.2)
        health = reply.json()
        assert (reply.status_code, health["status"]) == (200, "ready"), health
        assert health["provers"]["coq"]["status"] == "ready"
        contexts = {c["problem"]: c for c in health["contexts"].values()}
        assert contexts["coq.add_0"]["status"] == "ready"
        assert contexts["coq.broken"]["status"] == "failed"
        assert "NoSuchLibrary" in contexts["coq.broken"]["reason"]


def test_load_64_concurrent_clients_every_attempt_answered_in_order(
    hol_base: WarmProcess,
) -> None:
    """2,000 attempts of 97 statements, right or wrong at random, dealt over 64 concurrent
    clients that send them 8 per request; each answer must be its own, and every one
    counted. (A statement new to the context costs a goal and a new clone of the worker:
    with 2,000 distinct statements this test had not finished after 14 minutes here.)"""
    attempts, clients, per_call = 2000, 64, 8
    rng = random.Random(15)
    right = [rng.random() < 0.5 for _ in range(attempts)]

    def request(numbers: list[int]) -> list[dict]:
        return [
            {"problem": {"prover": "hol-light", "statement": f"`!n. n + {i % 97} = {i % 97} + n`"},
             "proof": "ARITH_TAC" if right[i] else "REWRITE_TAC[]"}
            for i in numbers
        ]  # fmt: skip

    async def one(client: CheckClient, numbers: list[int]) -> int:
        """How many of this client's attempts got their own verdict."""
        good = 0
        for k in range(0, len(numbers), per_call):
            chunk = numbers[k : k + per_call]
            outcomes = await client.acheck(request(chunk))
            expected = [Verdict.OK if right[i] else Verdict.FAIL for i in chunk]
            good += sum(o.verdict == e for o, e in zip(outcomes, expected, strict=True))
        return good

    async def everyone(url: str) -> list[int]:
        client = CheckClient(url, TOKEN)
        try:
            deals = [list(range(c, attempts, clients)) for c in range(clients)]
            return await asyncio.gather(*(one(client, numbers) for numbers in deals))
        finally:
            await client.aclose()

    with serving(hol_base) as s:
        start = time.monotonic()
        assert sum(asyncio.run(everyone(s.url))) == attempts
        seconds = time.monotonic() - start
        text = s.metrics()
    answered = sum(
        int(m) for m in re.findall(r'^proofeval_attempts_total\{verdict="\w+"\} (\d+)', text, re.M)
    )
    assert answered == attempts
    print(f"{attempts} attempts from {clients} clients in {seconds:.1f}s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_sigterm_drains_the_requests_in_flight_then_exits(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PROOFEVAL_TEST_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "proofeval.cli", "serve", "--port", str(port), "--provers",
           "coq", "--workers", "1", "--token-env", "PROOFEVAL_TEST_TOKEN"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        coq = {k: PROBLEMS[5][k] for k in ("prover", "statement", "header")}
        spin = {"problem": coq, "proof": COQ_SPIN}
        got: dict[str, httpx.Response] = {}
        body = {"items": [spin, {**spin, "proof": "intros. lia."}], "timeout": 4}
        auth = {"Authorization": f"Bearer {TOKEN}"}
        request = threading.Thread(
            target=lambda: got.update(r=httpx.post(f"{url}/check", json=body, headers=auth,
                                                   timeout=120))
        )  # fmt: skip
        request.start()
        time.sleep(2.0)  # the coqtop is up and spinning
        proc.send_signal(signal.SIGTERM)
        request.join(60)
        # uvicorn ends by re-raising the signal it handled, as process managers expect
        assert proc.wait(60) in (0, -signal.SIGTERM)
        assert [r["verdict"] for r in got["r"].json()["results"]] == ["TIMEOUT", "OK"]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_ready(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return
        except httpx.ConnectError:
            pass
        time.sleep(0.2)
    raise AssertionError("the service did not become ready")


def test_listening_beyond_loopback_needs_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "needs a token: give --token-env VAR" in capsys.readouterr().err
    os.environ.pop("PROOFEVAL_EMPTY_TOKEN", None)
    assert main(["serve", "--token-env", "PROOFEVAL_EMPTY_TOKEN"]) == 2
    assert "a token of 16+ characters" in capsys.readouterr().err
