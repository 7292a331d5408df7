"""A run records what produced it, and a resume never mixes settings: `proofeval run`
against a real local HTTP server playing the model (tests/openai_stub.py), the real Coq,
a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.report.run_data import load_run
from proofeval.runs.manifest import endpoint
from tests.openai_stub import StubServer

pytestmark = pytest.mark.coq

PROBLEMS = [
    {"id": "add_zero", "prover": "coq", "category": "arith",
     "header": "Require Import Arith Lia.",
     "statement": "Theorem add_zero : forall n : nat, n + 0 = n."},
]  # fmt: skip
ANSWER = "```coq\nProof. intros. lia. Qed.\n```"


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in PROBLEMS))
    return path


def _run(bench: Path, out: Path, server: StubServer, *extra: str) -> int:
    return main(
        ["run", str(bench), "--model", "stub",
         "--base-url", server.url.replace("http://", "http://user:secret@"),
         "--out", str(out), "--workers", "1", *extra]
    )  # fmt: skip


def test_a_run_records_what_produced_it_and_reports_show_it(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    stub_server.script(PROBLEMS[0]["statement"], [ANSWER] * 4)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server, "--temperature", "0.7") == 0
    info = load_run(out).info
    ident, about = info["identity"], info["provenance"]
    assert ident["model"] == "stub" and ident["temperature"] == 0.7
    assert ident["endpoint"] == endpoint(stub_server.url) == stub_server.url.rstrip("/")
    assert "secret" not in json.dumps(info)
    assert ident["template"] == "(each prover's built-in)" and len(ident["template_sha256"]) == 64
    assert about["proofeval"].startswith("proofeval ") and "--temperature" in about["command"]
    assert any(p.startswith("Coq ") for p in about["provers"]) and "ended" in info
    capsys.readouterr()

    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "model: stub at http://127.0.0.1" in text and "temperature 0.7" in text
    assert main(["report", str(out), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["produced_by"]["identity"]["model"] == "stub"


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        (["--model", "other"], "model: 'stub' then, 'other' now"),
        (["--temperature", "0.2"], "temperature: 0.7 then, 0.2 now"),
        (["--template", "plan_then_proof"], "template:"),
        (["--replay", "off"], "replay: True then, False now"),
    ],
)
def test_a_resume_with_other_settings_is_refused_and_names_them(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys, changed: list[str], named: str
) -> None:
    stub_server.script(PROBLEMS[0]["statement"], [ANSWER] * 8)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server, "--temperature", "0.7") == 0
    requests = stub_server.count()
    capsys.readouterr()
    settings = ["--temperature", "0.7", *changed] if "--temperature" not in changed else changed
    assert _run(bench, out, stub_server, *settings) == 2
    err = capsys.readouterr().err
    assert named in err and "would mix them in one pass@k" in err
    assert stub_server.count() == requests  # nothing asked of the model
    assert len(load_run(out).results) == 1  # nothing added


def test_more_samples_with_the_same_settings_extend_the_run(
    bench: Path, tmp_path: Path, stub_server: StubServer
) -> None:
    stub_server.script(PROBLEMS[0]["statement"], [ANSWER] * 4)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server) == 0
    assert _run(bench, out, stub_server, "--samples", "2") == 0
    run = load_run(out)
    assert len(run.results) == 2 and len(run.info["resumed"]) == 1  # type: ignore[arg-type]


def test_run_asks_only_for_the_problems_only_and_limit_keep(
    tmp_path: Path, stub_server: StubServer
) -> None:
    rows = [{**PROBLEMS[0], "id": f"add_zero_{i}"} for i in range(3)]
    bench = tmp_path / "three.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stub_server.script(PROBLEMS[0]["statement"], [ANSWER] * 4)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server, "--only", "add_zero_1,add_zero_2", "--limit", "1") == 0
    assert [r.problem_id for r in load_run(out).results] == ["add_zero_1"]
    assert stub_server.count() == 1


def test_an_unreachable_endpoint_is_one_error_before_any_prover_starts(
    bench: Path, tmp_path: Path, capsys
) -> None:
    closed = StubServer()
    url = closed.url
    closed.close()  # nothing listens there any more
    code = main(["run", str(bench), "--model", "m", "--base-url", url, "--max-retries", "0",
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach the endpoint" in err
    assert "coqtop" not in err and load_run(tmp_path / "run").results == []


def test_a_model_the_endpoint_does_not_serve_is_refused_at_once(
    bench: Path, tmp_path: Path, capsys
) -> None:
    with StubServer(models=["stub", "other-model"]) as server:
        code = _run(bench, tmp_path / "run", server, "--model", "stubb")
        assert server.count() == 0  # no completion asked for
    err = capsys.readouterr().err
    assert code == 2 and "model 'stubb' is not served there (stub, other-model)" in err


def test_retried_requests_are_counted_in_the_run_and_its_report(
    bench: Path, tmp_path: Path, capsys
) -> None:
    with StubServer(models=["stub"]) as server:
        server.script(PROBLEMS[0]["statement"], [ANSWER], failures=[429, 500])
        out = tmp_path / "run"
        assert _run(bench, out, server) == 0
    assert load_run(out).info["retried_requests"] == {"429": 1, "500": 1}
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "requests retried: 429 x1, 500 x1" in capsys.readouterr().out
