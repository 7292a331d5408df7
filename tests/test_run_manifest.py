"""A run records what produced it, and a resume never mixes settings: `proofeval run`
against a real local HTTP server playing the model (tests/openai_stub.py), the real Coq,
a real SQLite store."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.report.run_data import load_run
from proofeval.runs.manifest import NO_PROCEDURE, endpoint
from proofeval.store import RunStore
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


def test_an_agent_run_asks_the_endpoint_first_too(bench: Path, tmp_path: Path, capsys) -> None:
    with StubServer(models=["other-model"]) as server:
        code = _run(bench, tmp_path / "run", server, "--agent")
        assert server.count() == 0  # no conversation began
    err = capsys.readouterr().err
    assert code == 2 and "model 'stub' is not served there (other-model)" in err
    assert "coqtop" not in err


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


# --- repair and agent settings are part of a run's identity --------------------------


def _identity(out: Path) -> dict:
    ident = load_run(out).info["identity"]
    assert isinstance(ident, dict)
    return ident


def test_repair_settings_are_in_the_identity_and_more_rounds_extend(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    stub_server.script(PROBLEMS[0]["statement"], ["```coq\nProof. intros. Qed.\n```"])
    out = tmp_path / "run"
    assert _run(bench, out, stub_server) == 0  # a plain run: no repair settings yet
    assert _identity(out)["rounds"] == 0 and _identity(out)["repair_template"] is None
    assert _run(bench, out, stub_server, "--rounds", "1") == 0  # round 0 is the same: extends
    ident = _identity(out)
    assert ident["rounds"] == 1 and ident["repair_template"] == "(built-in repair)"
    assert len(str(ident["repair_template_sha256"])) == 64
    asked = stub_server.count()
    assert asked == 2  # round 0, then the repair of its FAIL

    other = tmp_path / "repair.j2"
    other.write_text("Try again: {{ statement }}\n")
    capsys.readouterr()
    for changed, named in (
        (["--rounds", "2", "--repair-template", str(other)], "repair_template: "),
        (["--rounds", "0"], "rounds: 1 then, 0 now"),
    ):
        assert _run(bench, out, stub_server, *changed) == 2
        err = capsys.readouterr().err
        assert named in err and "would mix them in one pass@k" in err
        assert stub_server.count() == asked and _identity(out)["rounds"] == 1

    assert _run(bench, out, stub_server, "--rounds", "2") == 0  # a larger R extends
    assert _identity(out)["rounds"] == 2 and stub_server.count() == asked + 1
    assert main(["report", str(out)]) == 0
    assert "repair: up to 2 rounds, (built-in repair) (sha256 " in capsys.readouterr().out


def submitter(body: dict) -> dict:
    """An agent that submits the proof at once."""
    submit = {
        "id": "c0",
        "type": "function",
        "function": {"name": "submit", "arguments": json.dumps({"proof": "intros. lia."})},
    }
    done = any(m["role"] == "tool" for m in body["messages"])
    return ({"role": "assistant", "content": "done"} if done
            else {"role": "assistant", "content": None, "tool_calls": [submit]})  # fmt: skip


def test_agent_settings_are_in_the_identity(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    stub_server.converse_with(submitter)
    out = tmp_path / "agent"
    assert _run(bench, out, stub_server, "--agent", "--max-tool-calls", "9") == 0
    ident = _identity(out)
    assert ident["agent"] is True and ident["agent_tool_calls"] == 9
    assert ident["agent_tokens"] == 200_000 and ident["agent_seconds"] == 900.0
    assert load_run(out).results[0].verdict.value == "OK"  # type: ignore[union-attr]
    asked = stub_server.count()
    capsys.readouterr()
    assert _run(bench, out, stub_server, "--agent", "--max-tool-calls", "5", "--samples", "2") == 2
    assert "agent_tool_calls: 9 then, 5 now" in capsys.readouterr().err
    assert _run(bench, out, stub_server, "--samples", "2") == 2  # a plain run in an agent's
    assert "agent: True then, False now" in capsys.readouterr().err
    assert stub_server.count() == asked and len(load_run(out).results) == 1
    assert _run(bench, out, stub_server, "--agent", "--max-tool-calls", "9", "--samples", "2") == 0
    assert len(load_run(out).results) == 2
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "agent: at most 9 tool calls, 200000 tokens and 900 s" in capsys.readouterr().out


def test_an_identity_recorded_before_repair_and_agent_settings_still_resumes(
    bench: Path, tmp_path: Path, stub_server: StubServer
) -> None:
    stub_server.script(PROBLEMS[0]["statement"], [ANSWER])
    out = tmp_path / "run"
    assert _run(bench, out, stub_server) == 0
    store = RunStore(out)  # as the previous proofeval recorded it: without those keys
    ident = {k: v for k, v in store.info()["identity"].items() if k not in NO_PROCEDURE}  # type: ignore[union-attr]
    store.set_info("identity", ident)
    store.close()
    assert _run(bench, out, stub_server, "--samples", "2") == 0
    assert len(load_run(out).results) == 2


# --- arms: the same problems under another setting, side by side, never pooled ---------


def by_model(body: dict) -> dict:
    """Model 'stub' proves the goal, model 'weak' does not."""
    proof = "intros. lia." if body["model"] == "stub" else "intros."
    return {"role": "assistant", "content": f"```coq\nProof. {proof} Qed.\n```"}


def test_arms_are_reported_side_by_side_and_never_pooled(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    stub_server.converse_with(by_model)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server, "--samples", "2") == 0
    assert _run(bench, out, stub_server, "--samples", "2", "--arm", "weak", "--model", "weak") == 0
    assert (out / "arms" / "weak" / "results.csv").is_file()
    run = load_run(out)
    assert [a.arm for a in run.every_arm()] == ["default", "weak"]
    [weak] = run.arms
    assert run.metrics.overall.pass_at_k[1] == 1.0 and weak.metrics.overall.pass_at_k[1] == 0.0
    assert len(run.results) == 2 and len(weak.results) == 2
    assert _identity(out)["model"] == "stub" and _identity(weak.path)["model"] == "weak"

    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    rows = [line.split() for line in text.splitlines()]
    assert ["default", "stub", "1", "2", "2", "2", "100.0%", "100.0%", "100.0%"] in rows
    assert ["weak", "weak", "1", "2", "2", "0", "0.0%", "0.0%", "0.0%"] in rows
    assert "== arm weak" in text and "model: weak at" in text
    assert main(["report", str(out), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["arm"] == "default" and doc["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert doc["arms"]["weak"]["pass_at_k"] == {"1": 0.0, "2": 0.0}
    assert doc["arms"]["weak"]["produced_by"]["identity"]["model"] == "weak"
    assert main(["report", str(out), "--csv", str(tmp_path / "arms.csv")]) == 0
    with (tmp_path / "arms.csv").open(newline="") as f:  # a block of rows per arm
        totals = {r["run"]: r["OK"] for r in csv.DictReader(f) if r["category"] == "Total"}
    assert totals == {str(out): "2", str(out / "arms" / "weak"): "0"}

    asked = stub_server.count()  # within an arm, a resume that would mix is refused
    assert _run(bench, out, stub_server, "--samples", "3", "--arm", "weak") == 2
    assert "model: 'weak' then, 'stub' now" in capsys.readouterr().err
    two = tmp_path / "two.jsonl"
    two.write_text(bench.read_text() + json.dumps({**PROBLEMS[0], "id": "add_zero_2"}) + "\n")
    assert _run(two, out, stub_server, "--arm", "third") == 2  # an arm is the same problems
    assert "other problems than arm 'default'" in capsys.readouterr().err
    assert _run(bench, out, stub_server, "--arm", "../x") == 2
    assert stub_server.count() == asked and not (out / "arms" / "third").exists()


def test_a_run_of_named_arms_only_reports_them(
    bench: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    stub_server.converse_with(by_model)
    out = tmp_path / "run"
    assert _run(bench, out, stub_server, "--arm", "a") == 0
    assert not (out / "proofeval.sqlite").exists()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 arm side by side" in text and "== arm a" in text and "== arm default" not in text
