"""`proofeval grade --method pf` end to end: scripted rewrites, checks and verdicts served by
the real stub HTTP server, chosen from each prompt."""

from __future__ import annotations

import json

import pytest

from proofeval.cli import main
from proofeval.grading.modules import parse_modules
from proofeval.grading.store import GradingStore
from tests.grading_data import H2V_ROWS, write_jsonl


def block(doc) -> str:
    return f"Thinking...\n```json\n{json.dumps(doc)}\n```"


P1, P2 = H2V_ROWS[0]["question"], H2V_ROWS[1]["question"]
P3 = "Show that 2 + 2 = 4."
ROWS = [*H2V_ROWS, {"id": "p3", "problem": P3, "steps": ["By computation."], "labels": [1]}]

GOOD_P1 = """<module id="T" kind="theorem" steps="0, 1">
<statement>1 + 1 = 2.</statement>
<proof>By definition of 2, 1 + 1 = 2.</proof>
</module>"""
LEMMA = """<module id="L1" kind="lemma" parent="T" steps="1">
<statement>Every prime is odd.</statement>
<proof>Primes are odd.</proof>
</module>"""
THEOREM = """<module id="T" kind="theorem" uses="L1" steps="0, 2">
<statement>Every prime is odd.</statement>
<proof>Let p be prime. By L1, p is odd.</proof>
</module>"""
BAD_P2 = THEOREM + "\n" + LEMMA  # T uses L1 before it is defined
GOOD_P2 = "Here is the rewrite.\n" + LEMMA + "\n" + THEOREM
P3_REWRITE = """<module id="T" kind="theorem" steps="0">
<statement>2 + 2 = 5.</statement><proof>By computation.</proof></module>"""


def responder(prompt: str) -> str | None:
    if prompt.startswith("PSEUDO-FORMAL REWRITE"):
        if P1 in prompt:
            return GOOD_P1
        if P2 in prompt:
            return GOOD_P2 if "# Errors found in it" in prompt else BAD_P2
        return P3_REWRITE
    if prompt.startswith("FAITHFULNESS CHECK"):
        if P3 in prompt:
            return block({"faithful": False, "problems": ["states 2 + 2 = 5"]})
        return block({"faithful": True, "problems": []})
    if prompt.startswith("MODULE VERIFICATION"):
        if "<proof>Primes are odd.</proof>" in prompt:
            issue = {"location": "the only step", "description": "2 is an even prime"}
            return block({"verdict": "incorrect", "issues": [issue]})
        return block({"verdict": "correct", "issues": []})
    if prompt.startswith("CALIBRATION"):
        assert "2 is an even prime" in prompt and "covering steps 1" in prompt
        return block({"steps": ["yes", "no", "no"]})
    return None


@pytest.fixture
def pf_run(tmp_path, stub_server):
    stub_server.respond_with(responder)
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "run"
    args = ["grade", str(data), "--method", "pf", "--runs", "2", "--pf-retries", "1"]
    args += ["--model", "m", "--base-url", stub_server.url, "--out", str(out)]
    assert main(args) == 0
    return out, args


def test_pf_pipeline_end_to_end(pf_run, stub_server, capsys):
    out, args = pf_run
    # p1: rewrite, faithfulness, verify; p2: 2 rewrites, 2 x 2 checks, calibration;
    # p3: 2 rewrites and 2 checks, never faithful. Runs share identical prompts (n=2).
    assert stub_server.count() == 3 + 7 + 4
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    reasons = {"rewrite: no faithful rewrite": 2}
    assert doc["gradings"] == {"total": 6, "unparsed": 2, "reasons": reasons}
    assert doc["steps"]["tpr"] == 0.75 and doc["steps"]["tnr"] == 1.0
    assert doc["first_error"]["tnr"] == 1.0
    by_stage = {k: v["calls"] for k, v in doc["cost"]["by_stage"].items()}
    assert by_stage == {"rewrite": 10, "faithful": 10, "verify": 6, "calibrate": 2}
    assert doc["cost"]["calls_per_grading"] == pytest.approx(28 / 6)

    store = GradingStore(out)
    gradings = {(g.item_id, g.run): g for g in store.gradings()}
    calls = store.calls()
    store.close()
    p2 = gradings[("p2", 1)]
    assert p2.parsed and p2.steps == [1, 0, 0] and p2.first_error == 1
    assert p2.details["calls"] == 7 and len(p2.details["attempts"]) == 2
    assert "not a module defined before it" in p2.details["attempts"][0]["errors"][0]
    lemma = next(m for m in p2.details["modules"] if m["id"] == "L1")
    assert lemma["verdict"] == "incorrect" and lemma["issues"][0]["description"]
    p1 = gradings[("p1", 0)]
    assert p1.steps == [1, 1] and p1.details["calibration"] is None
    p3 = gradings[("p3", 0)]
    assert not p3.parsed and "states 2 + 2 = 5" in p3.reason
    # the verifier of T saw L1's statement as established, not L1's proof
    verify_t = next(c for c in calls if c.item_id == "p2" and c.stage == "verify:T")
    assert "Every prime is odd." in verify_t.prompt and "Primes are odd." not in verify_t.prompt
    # resumable: nothing is asked again
    assert main(args) == 0
    assert stub_server.count() == 14


def test_pf_full_output_has_the_calibrated_step_verdicts(pf_run):
    out, _ = pf_run
    doc = json.loads((out / "grading_full_output.json").read_text())
    run = doc["p2"]["LLM_Full_Output"][0]
    assert run["step_verification"]["parsed"]["step_verdicts"] == ["yes", "no", "no"]
    assert doc["p3"]["LLM_Full_Output"][0]["step_verification"]["parsed"] is None


def test_unparseable_module_verdicts_fail_the_grading(tmp_path, stub_server, capsys):
    def broken(prompt: str) -> str | None:
        if prompt.startswith("MODULE VERIFICATION"):
            return "It is probably fine."
        return responder(prompt)

    stub_server.respond_with(broken)
    data = write_jsonl(tmp_path / "d.jsonl", H2V_ROWS[:1])
    out = tmp_path / "run"
    args = ["grade", str(data), "--method", "pf", "--model", "m", "--base-url"]
    assert main([*args, stub_server.url, "--out", str(out)]) == 0
    capsys.readouterr()
    main(["report", str(out), "--json"])
    reasons = {"verify: no ```json block": 1}
    assert json.loads(capsys.readouterr().out)["gradings"]["reasons"] == reasons


@pytest.mark.parametrize(
    "text, error",
    [
        ("no modules here", "no <module>"),
        ('<module id="T" kind="axiom"><statement>s</statement><proof>p</proof></module>', "kind"),
        ('<module id="T" kind="theorem"><statement>s</statement></module>', "<proof>"),
        ('<module id="a b" kind="theorem"><statement>s</statement><proof>p</proof></module>', "id"),
        (
            '<module id="T" kind="theorem" steps="7"><statement>s</statement>'
            "<proof>p</proof></module>",
            "not a step number",
        ),
        (
            '<module id="L" kind="lemma"><statement>s</statement><proof>p</proof></module>',
            "exactly one",
        ),
        (
            '<module id="T" kind="theorem" parent="X"><statement>s</statement>'
            "<proof>p</proof></module>",
            "parent X is not a module",
        ),
        (
            '<module id="L" kind="lemma" parent="T"><statement>s</statement><proof>p</proof>'
            '</module><module id="T" kind="theorem" parent="L"><statement>s</statement>'
            "<proof>p</proof></module>",
            "cycle",
        ),
        (
            '<module id="T" kind="theorem" uses="T"><statement>s</statement>'
            "<proof>p</proof></module>",
            "not a module defined before it",
        ),
    ],
)
def test_structural_errors(text, error):
    modules, errors = parse_modules(text, steps=2)
    assert any(error in e for e in errors), errors


def test_papers_need_no_theorem_and_keep_labels():
    text = '<module id="A" kind="lemma" label="Lemma 2.1">'
    text += "<statement>s</statement><proof>p</proof></module>"
    (module,), errors = parse_modules(text, steps=None)
    assert errors == [] and module.label == "Lemma 2.1"


def test_pf_on_a_paper_calibrates_to_result_labels(tmp_path, stub_server, capsys):
    (tmp_path / "2401.00001.txt").write_text("Lemma 2.1. DELTA. Theorem 3. EPSILON.")
    rows = [{"arxiv_id": "2401.00001", "Location of Error": "Lemma 2.1"}]
    data = write_jsonl(tmp_path / "bench.jsonl", rows)
    lemma = (
        '<module id="A" kind="lemma" label="Lemma 2.1"><statement>DELTA</statement>'
        "<proof>wrong step</proof></module>"
    )
    theorem = (
        '<module id="B" kind="theorem" label="Theorem 3" uses="A">'
        "<statement>EPSILON</statement><proof>by A</proof></module>"
    )

    def paper(prompt: str) -> str | None:
        if prompt.startswith("PSEUDO-FORMAL REWRITE"):
            assert 'label="Lemma 2.1"' in prompt  # the paper variant of the format
            return lemma + theorem
        if prompt.startswith("FAITHFULNESS CHECK"):
            return block({"faithful": True, "problems": []})
        if prompt.startswith("MODULE VERIFICATION"):
            wrong = "wrong step" in prompt
            issues = [{"location": "its proof", "description": "gap"}] if wrong else []
            return block({"verdict": "incorrect" if wrong else "correct", "issues": issues})
        if prompt.startswith("CALIBRATION"):
            return block({"errors": [{"location": "Lemma 2.1", "description": "gap"}]})
        if prompt.startswith("You decide whether an error"):
            return block({"matches": [0]})
        return None

    stub_server.respond_with(paper)
    out = tmp_path / "run"
    args = ["grade", str(data), "--method", "pf", "--model", "m", "--out", str(out)]
    assert main([*args, "--base-url", stub_server.url]) == 0
    capsys.readouterr()
    main(["report", str(out), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["gradings"]["unparsed"] == 0
    (k1,) = doc["error_finding"]["locations"]
    assert (k1["precision"], k1["recall"]) == (1.0, 1.0)
    calls = {k: v["calls"] for k, v in doc["cost"]["by_stage"].items()}
    assert calls == {"rewrite": 1, "faithful": 2, "verify": 2, "calibrate": 1}
    assert doc["cost"]["calls_per_grading"] == 1 + 2 + 2 + 1


def test_two_grading_runs_side_by_side(pf_run, tmp_path, stub_server, capsys):
    pf_out, _ = pf_run

    def all_yes(prompt: str) -> str | None:
        if prompt.startswith("You are an expert mathematician grading a proof"):
            count = prompt.count("[Step ")
            doc = {"steps": ["yes"] * count, "first_error": -1, "verdict": "correct"}
            return block(doc)
        return responder(prompt)

    stub_server.respond_with(all_yes)
    base_out = tmp_path / "base"
    args = ["grade", str(tmp_path / "data.jsonl"), "--runs", "2", "--model", "m"]
    assert main([*args, "--base-url", stub_server.url, "--out", str(base_out)]) == 0
    capsys.readouterr()
    assert main(["report", str(base_out), str(pf_out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "proofeval-grading-comparison/1" and doc["same_items"]
    a, b = doc["runs"]["A"], doc["runs"]["B"]
    assert (a["method"], b["method"]) == ("baseline", "pf")
    # the all-yes judge finds no incorrect step: TNR 0; pf's is 1
    assert doc["difference"]["steps"]["tnr"] == 1.0
    assert doc["difference"]["calls_per_grading"] == pytest.approx(28 / 6)
    assert doc["difference"]["error_finding"]["steps"][0]["k"] == 1
    assert main(["report", str(base_out), str(pf_out), "--html", str(tmp_path / "page")]) == 0
    text = capsys.readouterr().out
    assert "steps tnr" in text and "+100.0" in text and "calls per grading" in text
    page = (tmp_path / "page" / "index.html").read_text()
    assert "Proofs (A)" in page and "Proofs (B)" in page
    # a grading run is not compared with a proof-checking one
    assert main(["report", str(base_out), str(tmp_path / "data.jsonl")]) == 2
