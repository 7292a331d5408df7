"""The OpenAI-compatible client and `proofeval generate` against a real HTTP server (the stub in
tests/openai_stub.py): n samples, chat and completion styles, retries, errors, resuming."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.generate.client import GenerationError, Generator, SamplingSettings
from proofeval.model import Generation, Problem
from tests.openai_stub import StubServer

P = Problem(id="p", statement="`!n. n + 0 = n`", category="arith")
Q = Problem(id="q", statement="`!m. 0 + m = m`", category="arith")


def settings(url: str, **kwargs) -> SamplingSettings:
    fast = {"backoff_base": 0.01, "backoff_cap": 0.05, "concurrency": 2}
    return SamplingSettings(model="stub-model", base_url=url, **{**fast, **kwargs})


def collect(s: SamplingSettings, requests) -> list[Generation]:
    got: list[Generation] = []
    lock = threading.Lock()

    def on(gen: Generation) -> None:
        with lock:
            got.append(gen)

    Generator(s).generate(requests, on)
    return sorted(got, key=lambda g: (g.problem_id, g.sample))


def test_n_samples_in_one_request_with_tokens_and_seconds(stub_server: StubServer):
    stub_server.script(P.statement, ["A", "B", "C"])
    gens = collect(settings(stub_server.url, samples=3), [(P, "prove " + P.statement, [0, 1, 2])])
    assert [(g.sample, g.output) for g in gens] == [(0, "A"), (1, "B"), (2, "C")]
    assert stub_server.count() == 1 and stub_server.requests[0].n == 3
    assert all(g.model == "stub-model" and g.prompt == "prove " + P.statement for g in gens)
    assert gens[0].prompt_tokens == 7  # the stub counts words
    assert sum(g.completion_tokens for g in gens) == 3
    assert all(g.seconds >= 0 for g in gens)


def test_only_the_missing_samples_are_asked(stub_server: StubServer):
    stub_server.script(P.statement, ["X"])
    gens = collect(settings(stub_server.url, samples=4), [(P, P.statement, [1, 3])])
    assert [g.sample for g in gens] == [1, 3]
    assert stub_server.requests[0].n == 2


def test_completion_style_and_sampling_parameters_are_sent(stub_server: StubServer):
    stub_server.script(P.statement, ["T"])
    s = settings(stub_server.url, style="completion", temperature=0.6, top_p=0.95, max_tokens=99)
    gens = collect(s, [(P, P.statement, [0])])
    request = stub_server.requests[0]
    assert request.path == "/v1/completions" and request.body["prompt"] == P.statement
    assert request.body["temperature"] == 0.6 and request.body["top_p"] == 0.95
    assert request.body["max_tokens"] == 99
    assert "n" not in request.body and gens[0].output == "T"


def test_chat_sends_reasoning_effort_and_max_completion_tokens(stub_server: StubServer):
    collect(settings(stub_server.url, reasoning_effort="high", max_tokens=7), [(P, "x", [0])])
    body = stub_server.requests[0].body
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 7
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert "temperature" not in body  # unset: the server's default applies


def test_rate_limits_and_server_errors_are_retried(stub_server: StubServer):
    stub_server.script(P.statement, ["ok"], failures=[429, 500, 503])
    gens = collect(settings(stub_server.url), [(P, P.statement, [0])])
    assert [g.output for g in gens] == ["ok"]
    assert [r.status for r in stub_server.requests] == [429, 500, 503, 200]


def test_a_slow_request_times_out_and_is_retried(stub_server: StubServer):
    stub_server.script(P.statement, ["late but fine"], delays=[3.0])
    gens = collect(settings(stub_server.url, request_timeout=0.5), [(P, P.statement, [0])])
    assert [g.output for g in gens] == ["late but fine"]
    assert stub_server.count(P.statement) == 2


def test_giving_up_names_the_problem_and_the_last_error(stub_server: StubServer):
    stub_server.script(P.statement, ["never"], failures=[500] * 10)
    with pytest.raises(GenerationError) as failure:
        collect(settings(stub_server.url, max_retries=2), [(P, P.statement, [0])])
    assert "problem p: gave up after 3 tries: HTTP 500" in str(failure.value)
    assert stub_server.count() == 3


def test_a_wrong_api_key_stops_at_once_with_a_hint(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("PROOFEVAL_TEST_KEY", raising=False)
    with StubServer(api_key="secret") as server:
        s = settings(server.url, api_key_env="PROOFEVAL_TEST_KEY")
        with pytest.raises(GenerationError, match=r"HTTP 401.*\$PROOFEVAL_TEST_KEY, which is not"):
            collect(s, [(P, P.statement, [0]), (Q, Q.statement, [0])])
        assert server.count() <= 2  # not retried
        monkeypatch.setenv("PROOFEVAL_TEST_KEY", "secret")
        assert len(collect(s, [(P, P.statement, [0])])) == 1


@pytest.mark.parametrize("mode", ["ignore_n", "reject_n"])
def test_servers_without_n_get_one_request_per_sample(mode: str):
    with StubServer(**{mode: True}) as server:
        server.script(P.statement, ["1", "2", "3", "4"])
        server.script(Q.statement, ["5"])
        s = settings(server.url, samples=4, concurrency=1)
        gens = collect(s, [(P, P.statement, [0, 1, 2, 3]), (Q, Q.statement, [0, 1])])
        assert [(g.problem_id, g.sample) for g in gens] == [
            *(("p", i) for i in range(4)),
            ("q", 0),
            ("q", 1),
        ]
        assert sorted(g.output for g in gens if g.problem_id == "p") == ["1", "2", "3", "4"]
        assert server.requests[-1].n == 1  # later problems are asked one sample at a time


def test_an_unreachable_endpoint_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with StubServer() as server:
        url = server.url  # a port nothing listens on once the server is closed
    bench = write_bench(tmp_path, [P])
    code = main(
        ["generate", str(bench), "--out", str(tmp_path / "run"), "--model", "m", "--base-url",
         url, "--max-retries", "0"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]  # after the progress bar
    assert last.startswith("proofeval: error: ") and "cannot reach the endpoint" in last


def write_bench(tmp_path: Path, problems: list[Problem]) -> Path:
    path = tmp_path / "bench.jsonl"
    rows = [{"id": p.id, "statement": p.statement, "category": p.category} for p in problems]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def generate(bench: Path, out: Path, url: str, *extra: str) -> int:
    return main(
        ["generate", str(bench), "--out", str(out), "--model", "m", "--base-url", url,
         "--samples", "2", *extra]
    )  # fmt: skip


def test_generate_writes_answers_and_resumes(tmp_path: Path, stub_server: StubServer):
    stub_server.script(P.statement, ["Sure:\n```ocaml\nARITH_TAC\n```\nDone."])
    stub_server.script(Q.statement, ["ok"], failures=[400])  # n=2 rejected: per-sample
    bench, run = write_bench(tmp_path, [P, Q]), tmp_path / "run"
    assert generate(bench, run, stub_server.url) == 0
    rows = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [(r["problem_id"], r["sample"]) for r in rows] == [
        ("p", 0),
        ("p", 1),
        ("q", 0),
        ("q", 1),
    ]
    assert rows[0]["answer"] == "ARITH_TAC" and rows[0]["generation"] == rows[0]["output"]
    assert rows[0]["model"] == "m" and rows[0]["completion_tokens"] > 0
    asked = stub_server.count()
    assert generate(bench, run, stub_server.url) == 0  # nothing missing: no request
    assert stub_server.count() == asked
    assert generate(bench, run, stub_server.url, "--samples", "3") == 0  # one more each
    assert [r.n for r in stub_server.requests[asked:]] == [1, 1]


def test_a_failed_generate_keeps_what_arrived(tmp_path: Path, stub_server: StubServer, capsys):
    stub_server.script(P.statement, ["fine"])
    stub_server.script(Q.statement, ["x"], failures=[404])
    bench, run = write_bench(tmp_path, [P, Q]), tmp_path / "run"
    assert generate(bench, run, stub_server.url, "--concurrency", "1") == 2
    assert "HTTP 404" in capsys.readouterr().err
    rows = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [(r["problem_id"], r["sample"]) for r in rows] == [("p", 0), ("p", 1)]
    stub_server.script(Q.statement, ["y"])
    assert generate(bench, run, stub_server.url) == 0
    assert stub_server.requests[-1].key == Q.statement  # only q was asked again
