"""`proofeval grade --method baseline` end to end against the real stub HTTP server."""

from __future__ import annotations

import json

import pytest

from proofeval.cli import main
from proofeval.grading.parse import Unparsed, error_list, step_answer
from tests.grading_data import H2V_ROWS, encrypted, write_jsonl


def answer(steps, first, verdict, before="Let me check each step.\n"):
    doc = {"steps": steps, "first_error": first, "verdict": verdict}
    return f"{before}```json\n{json.dumps(doc)}\n```\n"


P1 = H2V_ROWS[0]["question"]
P2 = H2V_ROWS[1]["question"]


def grade(*args) -> int:
    return main(["grade", *map(str, args)])


def report_json(run_dir, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", str(run_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_baseline_on_encrypted_hard2verify_counts_malformed_answers_as_failed(
    tmp_path, stub_server, capsys
):
    data = write_jsonl(tmp_path / "h2v.jsonl", [encrypted(r) for r in H2V_ROWS])
    stub_server.script(P1, [answer(["yes", "yes"], -1, "correct"), "Looks fine to me."])
    stub_server.script(
        P2,
        [answer(["yes", "no", "no"], 1, "incorrect"), answer(["yes", "yes"], -1, "correct")],
    )
    out = tmp_path / "run"
    args = ["--model", "judge", "--base-url", stub_server.url, "--runs", 2, "--out", out]
    assert grade(data, *args) == 0
    assert stub_server.count() == 2  # one request per proof, n=2
    printed = capsys.readouterr().out
    assert (
        "4 gradings, 1 failed (counted wrong), by reason:\n     1  judge: no ```json block"
        in printed
    )

    doc = report_json(out, capsys)
    reasons = {"judge: no ```json block": 1}
    assert doc["gradings"] == {"total": 4, "unparsed": 1, "reasons": reasons}
    assert doc["method"] == "baseline" and doc["runs"] == 2 and doc["models"] == ["judge"]
    # run 0 is perfect; run 1: p1 unparsed (both steps wrong), p2 two verdicts for 3 steps
    steps = doc["steps"]
    assert steps["tpr"] == pytest.approx((1 + 1 / 3) / 2) and steps["tnr"] == pytest.approx(0.5)
    assert steps["per_run"][1]["tnr"] == 0.0
    assert (steps["positives"], steps["negatives"]) == (3, 2)
    assert (doc["responses"]["tpr"], doc["responses"]["tnr"]) == (0.5, 0.5)
    assert (doc["first_error"]["tpr"], doc["first_error"]["tnr"]) == (0.5, 0.5)
    k1, k2 = doc["error_finding"]["steps"]
    assert (k1["precision"], k1["recall"]) == (0.5, 0.5)
    assert (k2["precision"], k2["recall"]) == (0.5, 1.0) and k2["seed"] is None
    cost = doc["cost"]
    assert cost["calls"] == 4 and cost["calls_per_grading"] == 1.0
    assert cost["by_stage"]["judge"]["calls"] == 4 and cost["prompt_tokens"] > 0

    # resumable: the same command asks nothing; one more run asks only for it
    assert grade(data, *args) == 0
    assert stub_server.count() == 2
    args[args.index("--runs") + 1] = 3
    assert grade(data, *args) == 0
    assert stub_server.count() == 4
    assert report_json(out, capsys)["gradings"]["total"] == 6


def test_full_output_is_written_in_the_runners_layout(tmp_path, stub_server):
    data = write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS)
    stub_server.script(P1, ["no json here"])
    stub_server.script(P2, [answer(["yes", "no", "no"], 1, "incorrect")])
    out = tmp_path / "run"
    assert grade(data, "--model", "m", "--base-url", stub_server.url, "--out", out) == 0
    doc = json.loads((out / "grading_full_output.json").read_text())
    p1, p2 = doc["p1"], doc["p2"]
    assert p1["Points"] == 7 and p1["ground_truth_label"] == "correct"
    assert p1["LLM_Full_Output"][0]["step_predictions"] == []
    assert p1["LLM_Full_Output"][0]["score"] is None
    assert p2["LLM_Full_Output"][0]["step_predictions"] == [1, 0, 0]
    assert p2["LLM_Full_Output"][0]["text"].startswith("Let me check")
    assert p2["human_labels"] == [1, 0, 0] and p2["LLM_Score"] == 0


def test_a_method_change_on_the_same_run_directory_is_refused(tmp_path, stub_server, capsys):
    data = write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS[:1])
    out = tmp_path / "run"
    base = ["--model", "m", "--base-url", stub_server.url, "--out", out]
    assert grade(data, *base) == 0
    assert grade(data, *base, "--method", "pf") == 2
    assert "graded with --method baseline" in capsys.readouterr().err


def test_without_a_model_only_the_store_answers(tmp_path, capsys):
    data = write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS[:1])
    assert grade(data, "--out", tmp_path / "run") == 2
    assert "give --model" in capsys.readouterr().err


def test_report_on_a_proof_checking_run_is_unchanged(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none")]) == 2
    assert "no such run directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, why",
    [
        ("no block at all", "no ```json block"),
        ("```json\n{steps: [yes]}\n```", "not JSON"),
        ("```json\n[1, 2]\n```", "not an object"),
        (
            '```json\n{"steps": ["yes", "maybe"], "first_error": -1, "verdict": "correct"}\n```',
            "yes",
        ),
        ('```json\n{"steps": "yes", "first_error": -1, "verdict": "correct"}\n```', "yes"),
        (
            '```json\n{"steps": ["yes"], "first_error": "-1", "verdict": "correct"}\n```',
            "first_error",
        ),
        (
            '```json\n{"steps": ["yes"], "first_error": true, "verdict": "correct"}\n```',
            "first_error",
        ),
        ('```json\n{"steps": ["yes"], "first_error": -1, "verdict": "fine"}\n```', "verdict"),
    ],
)
def test_malformed_step_answers_are_unparsed(text, why):
    with pytest.raises(Unparsed, match=why):
        step_answer(text)


def test_the_last_json_block_decides():
    # a judge that quotes an example block first and answers after is read by its answer
    text = answer(["no"], 0, "incorrect") + "On reflection:\n" + answer(["yes"], -1, "correct")
    assert step_answer(text) == ([1], True, -1)


def test_error_lists():
    ok = '```json\n{"errors": [{"location": " Theorem 2 ", "description": "x"}]}\n```'
    assert error_list(ok) == [{"location": "Theorem 2", "description": "x"}]
    assert error_list('```json\n{"errors": []}\n```') == []
    with pytest.raises(Unparsed, match="location"):
        error_list('```json\n{"errors": [{"where": "Theorem 2"}]}\n```')


def test_processbench_rows_get_first_error_and_response_metrics(tmp_path, stub_server, capsys):
    rows = [
        {"id": "a", "problem": "Compute 2+2.", "steps": ["2+2=5", "so 5"], "label": 0},
        {"id": "b", "problem": "Compute 3+3.", "steps": ["3+3=6"], "label": -1},
    ]
    data = write_jsonl(tmp_path / "pb.jsonl", rows)
    stub_server.script("Compute 2+2.", [answer(["yes", "no"], 1, "incorrect")])
    stub_server.script("Compute 3+3.", [answer(["yes"], -1, "correct")])
    out = tmp_path / "run"
    assert grade(data, "--model", "m", "--base-url", stub_server.url, "--out", out) == 0
    doc = report_json(out, capsys)
    assert doc["steps"] is None  # ProcessBench labels only the first wrong step
    fe = doc["first_error"]
    assert (fe["tpr"], fe["tnr"], fe["correct"], fe["flawed"]) == (1.0, 0.0, 1, 1)
    assert (doc["responses"]["tpr"], doc["responses"]["tnr"]) == (1.0, 1.0)


def test_a_changed_proof_is_graded_again(tmp_path, stub_server):
    stub_server.script(P1, [answer(["yes", "yes"], -1, "correct")])
    stub_server.script(P2, [answer(["yes", "no", "no"], 1, "incorrect")])
    out = tmp_path / "run"
    base = ["--model", "m", "--base-url", stub_server.url, "--out", out]
    assert grade(write_jsonl(tmp_path / "a.jsonl", H2V_ROWS), *base) == 0
    assert stub_server.count() == 2
    changed = [H2V_ROWS[0], dict(H2V_ROWS[1], model_response_by_step=["Let p.", "Odd.", "Done."])]
    assert grade(write_jsonl(tmp_path / "b.jsonl", changed), *base) == 0
    assert stub_server.count(P2) == 2 and stub_server.count(P1) == 1


def test_runs_reach_servers_that_ignore_n(tmp_path):
    from tests.openai_stub import StubServer

    with StubServer(ignore_n=True) as server:
        server.script(P1, [answer(["yes", "yes"], -1, "correct"), "garbage"])
        data = write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS[:1])
        out = tmp_path / "run"
        args = ["--model", "m", "--base-url", server.url, "--runs", 3, "--out", out]
        assert grade(data, *args) == 0
        assert server.choices_served(P1) == 3
    from proofeval.grading.store import GradingStore

    store = GradingStore(out)
    parsed = [g.parsed for g in store.gradings()]
    store.close()
    # run 0 came with the first request; runs 1 and 2 were asked one each, in parallel
    assert parsed[0] and sorted(parsed[1:]) == [False, True]
