"""A hostile or broken judge: every reply shape that once crashed `proofeval grade` (issue 27),
served by the real stub HTTP server. Each is that call's failed grading with its reason,
counted in the report; a re-run and a report after it work, and nothing stored breaks them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.generate.client import Generator, SamplingSettings
from proofeval.grading.parse import reason_kind
from proofeval.model import Problem
from proofeval.store import FILE_NAME
from tests.grading_data import H2V_ROWS, write_jsonl
from tests.openai_stub import Raw, StubServer

P1, P2 = H2V_ROWS[0]["question"], H2V_ROWS[1]["question"]
GOOD = '```json\n{"steps": ["yes", "yes"], "first_error": -1, "verdict": "correct"}\n```'
DEEP = 100_000


def chat(choices: object = ..., usage: object = ..., content: object = ...) -> Raw:
    """A chat completion body; `content` fills one choice's message; ... leaves a key out."""
    if content is not ...:
        choices = [{"index": 0, "message": {"role": "assistant", "content": content}}]
    doc: dict = {"id": "x", "object": "chat.completion", "created": 0, "model": "judge"}
    if choices is not ...:
        doc["choices"] = choices
    if usage is not ...:
        doc["usage"] = usage
    return Raw(json.dumps(doc).encode())  # a lone surrogate goes out as the escape \ud800


# shape -> (the reply, why the grading failed: after "judge: malformed reply: ")
MALFORMED = {
    "choice_without_message": (
        chat([{"index": 0, "finish_reason": "stop"}]),
        'a choice has no "message"',
    ),
    "content_list": (
        chat(content=[{"type": "text", "text": GOOD}]),
        '"content" is a list, not a string',
    ),
    "content_dict": (chat(content={"text": GOOD}), '"content" is an object, not a string'),
    "content_int": (chat(content=7), '"content" is a number, not a string'),
    "choices_null": (chat(None), '"choices" is null, not a list'),
    "choices_missing": (chat(), 'the reply has no "choices"'),
    "choices_string": (chat("choices"), '"choices" is a string, not a list'),
    "choice_a_string": (chat(["a choice"]), "a choice is a string, not an object"),
    "choices_empty": (chat([]), "no choices returned"),
    "usage_a_string": (
        chat(content=GOOD, usage="12 tokens"),
        '"usage" is a string, not an object',
    ),
    "usage_null_fields": (
        chat(content=GOOD, usage={"prompt_tokens": None, "completion_tokens": None}),
        '"usage.prompt_tokens" is null, not a token count',
    ),
    "string_token_counts": (
        chat(content=GOOD, usage={"prompt_tokens": 10, "completion_tokens": "20"}),
        '"usage.completion_tokens" is a string, not a token count',
    ),
    "token_count_beyond_sqlite": (
        chat(content=GOOD, usage={"prompt_tokens": 2**64, "completion_tokens": 1}),
        '"usage.prompt_tokens" is a number, not a token count',
    ),
    "not_json": (Raw(b"<html>502 Bad Gateway</html>"), "the reply is not JSON"),
    "not_unicode": (Raw(b'{"choices": "\xff\xfe\xfd"}'), "the reply is not JSON"),
    "json_list": (Raw(b'[{"choices": []}]'), "the reply is a list, not a JSON object"),
    "lone_surrogate": (
        chat(content="\ud800" + GOOD),
        '"content" holds a lone surrogate: not Unicode text',
    ),
    "body_nested_deep": (
        Raw(b'{"choices": ' + b"[" * DEEP + b"]" * DEEP + b"}"),
        "the reply is JSON nested too deeply",
    ),
}


def grade(data: Path, out: Path, url: str, *extra: object) -> int:
    args = ["grade", data, "--model", "judge", "--base-url", url, "--out", out, *extra]
    return main([str(a) for a in args])


def report(out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """The JSON report, after checking that the text report works too."""
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert main(["report", str(out), "--json"]) == 0
    text = capsys.readouterr().out
    return json.loads(text[text.index('{\n  "format"') :])


def p1_reason(out: Path) -> str:
    doc = json.loads((out / "grading_full_output.json").read_text())
    return doc["p1"]["LLM_Full_Output"][0]["proofeval"]["reason"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS)


@pytest.mark.parametrize("shape", MALFORMED)
def test_a_malformed_judge_reply_is_that_calls_failed_grading(
    shape: str, data: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    reply, why = MALFORMED[shape]
    stub_server.script(P1, [reply])
    stub_server.script(P2, [GOOD])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url) == 0
    kind = f"judge: malformed reply: {why}"  # each shape its own reason in the report
    assert f"2 gradings, 1 failed (counted wrong), by reason:\n     1  {kind}\n" in (
        capsys.readouterr().out
    )
    assert p1_reason(out) == kind
    doc = report(out, capsys)
    assert doc["gradings"] == {"total": 2, "unparsed": 1, "reasons": {kind: 1}}
    assert doc["cost"]["calls"] == 1  # the malformed call is not stored: nothing to replay

    # a re-run asks that call again (and only it), and the report counts it once
    assert grade(data, out, stub_server.url) == 0
    assert (stub_server.count(P1), stub_server.count(P2)) == (2, 1)
    assert report(out, capsys)["gradings"]["unparsed"] == 1

    # once the judge answers properly, the re-run's grading replaces the failed one
    stub_server.script(P1, [GOOD])
    assert grade(data, out, stub_server.url) == 0
    doc = report(out, capsys)
    assert doc["gradings"] == {"total": 2, "unparsed": 0, "reasons": {}}
    assert doc["cost"]["calls"] == 2


def test_each_kind_of_malformed_reply_is_its_own_counted_reason(
    tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    """Four judge replies malformed four ways, one answer with no block, two good ones: the
    summary and the JSON count each kind apart (they were all "judge" once)."""
    shapes = ["not_json", "choices_missing", "content_list", "usage_a_string"]
    rows = [dict(H2V_ROWS[0], unique_id=f"q{n}", question=f"Show that 1 + 1 = 2 ({n}).")
            for n in range(7)]  # fmt: skip
    for n, shape in enumerate(shapes):
        stub_server.script(f"({n})", [MALFORMED[shape][0]])
    stub_server.script("(4)", ["It is correct, trust me."])
    stub_server.script("(5)", [GOOD])
    stub_server.script("(6)", [chat(content="no block here either")])
    out = tmp_path / "run"
    assert grade(write_jsonl(tmp_path / "d.jsonl", rows), out, stub_server.url) == 0
    printed = capsys.readouterr().out
    expected = {f"judge: malformed reply: {MALFORMED[s][1]}": 1 for s in shapes}
    expected["judge: no ```json block"] = 2
    assert report(out, capsys)["gradings"] == {"total": 7, "unparsed": 6, "reasons": expected}
    lines = printed[printed.index("7 gradings") :].splitlines()
    assert lines[0].endswith("7 gradings, 6 failed (counted wrong), by reason:")
    assert lines[1] == "     2  judge: no ```json block"  # the most frequent first
    assert sorted(lines[2:6]) == sorted(
        f"     1  {kind}" for kind in expected if "malformed" in kind
    )


def test_a_reason_kind_never_holds_a_models_text() -> None:
    """A pseudo-formal reason names modules by the ids the model gave them: its kind is
    still made of proofeval's own words."""
    verify = (
        'verify: module <b>x</b>: malformed reply: FORGED; module y: "content" is a list, '
        "not a string; module z: no ```json block"
    )
    assert reason_kind(verify) == "verify: malformed reply"
    forged = "verify: module x: no faithful rewrite <script>: the reply is not JSON"
    assert reason_kind(forged) == "verify: no faithful rewrite"
    rewrite = "rewrite: no faithful rewrite in 3 attempts: module L1 is not faithful: 2 + 2 = 5"
    assert reason_kind(rewrite) == "rewrite: no faithful rewrite"
    assert reason_kind("judge: the ```json block is not JSON (Expecting value)") == (
        "judge: the ```json block is not JSON"
    )
    assert reason_kind("no text: the paper 2401.1 has no file") == "no text"
    assert reason_kind("runner: <img src=x>") == "runner"
    assert reason_kind("no step verdicts in the runner's output") == (
        "no step verdicts in the runner's output"
    )
    assert reason_kind("<b>x</b>") == reason_kind("A" * 500 + ": x") == "other"


def test_json_nested_100000_deep_in_the_answer_is_unparsed_and_replays(
    data: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    """A well-formed reply whose answer is hostile: it is stored (the judge said it), so
    every re-run replays it; the parser must fail it with a reason, every time."""
    deep = "```json\n" + "[" * DEEP + "]" * DEEP + "\n```"
    stub_server.script(P1, [deep])
    stub_server.script(P2, [GOOD])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url) == 0
    assert p1_reason(out) == "judge: the ```json block is nested too deeply"
    for _ in range(2):
        doc = report(out, capsys)
        reasons = {"judge: the ```json block is nested too deeply": 1}
        assert doc["gradings"] == {"total": 2, "unparsed": 1, "reasons": reasons}
        assert doc["cost"]["calls"] == 2
        assert grade(data, out, stub_server.url) == 0  # replayed from the store
        assert stub_server.count() == 2
    assert p1_reason(out) == "judge: the ```json block is nested too deeply"


def test_null_usage_is_a_reply_without_token_counts(
    data: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    """usage is optional in the API (servers that count nothing leave it out or null):
    the grading stands, with no tokens counted."""
    stub_server.script(P1, [chat(content=GOOD, usage=None)])
    stub_server.script(P2, [chat(content=GOOD)])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url) == 0
    doc = report(out, capsys)
    assert doc["gradings"]["unparsed"] == 0
    assert (doc["cost"]["prompt_tokens"], doc["cost"]["completion_tokens"]) == (0, 0)


def test_a_store_holding_text_token_counts_still_reports(
    data: Path, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    """Run directories written before the client read replies strictly may hold token
    counts stored as text: the report reads them as numbers (or none), never crashes."""
    stub_server.script(P1, [GOOD])
    stub_server.script(P2, [GOOD])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url) == 0
    with sqlite3.connect(out / FILE_NAME) as db:
        db.execute("UPDATE grading_calls SET prompt_tokens = 'many', completion_tokens = '12x'")
    doc = report(out, capsys)
    assert doc["cost"]["calls"] == 2
    assert (doc["cost"]["prompt_tokens"], doc["cost"]["completion_tokens"]) == (0, 24)
    assert grade(data, out, stub_server.url) == 0


def test_pf_fails_only_the_stage_whose_reply_was_malformed(
    tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    rewrite = (
        '<module id="T" kind="theorem" steps="0, 1">\n<statement>1 + 1 = 2.</statement>\n'
        "<proof>By definition of 2.</proof>\n</module>"
    )
    replies = {
        "PSEUDO-FORMAL REWRITE": rewrite,
        "FAITHFULNESS CHECK": '```json\n{"faithful": true, "problems": []}\n```',
        "MODULE VERIFICATION": chat(content={"verdict": "correct"}),
    }
    stub_server.respond_with(lambda prompt: replies[prompt.split("\n", 1)[0].strip()])
    data = write_jsonl(tmp_path / "h2v.jsonl", H2V_ROWS[:1])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url, "--method", "pf") == 0
    reason = 'verify: module T: malformed reply: "content" is an object, not a string'
    assert p1_reason(out) == reason
    reasons = {'verify: malformed reply: "content" is an object, not a string': 1}
    assert report(out, capsys)["gradings"]["reasons"] == reasons
    asked = stub_server.count()
    assert grade(data, out, stub_server.url, "--method", "pf") == 0
    assert stub_server.count() == asked + 1  # only the verification is asked again
    replies["MODULE VERIFICATION"] = '```json\n{"verdict": "correct", "issues": []}\n```'
    assert grade(data, out, stub_server.url, "--method", "pf") == 0
    assert report(out, capsys)["gradings"]["unparsed"] == 0


def test_a_malformed_matching_reply_leaves_that_prediction_unjudged(
    tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "2401.00002v1.txt").write_text("Lemma 2. BETA holds. Theorem 3. GAMMA.")
    row = {"arxiv_id": "2401.00002", "version": "v1", "Location of Error": "Lemma 2"}
    data = write_jsonl(tmp_path / "bench.jsonl", [row])
    judge: dict[str, str | Raw] = {"reply": chat(choices=None)}
    stub_server.respond_with(
        lambda prompt: judge["reply"] if prompt.startswith("You decide whether an error") else None
    )
    found = {"errors": [{"location": "Lemma 2", "description": "wrong"}]}
    stub_server.script("BETA", [f"```json\n{json.dumps(found)}\n```"])
    out = tmp_path / "run"
    assert grade(data, out, stub_server.url, "--papers", papers) == 0
    doc = report(out, capsys)
    assert doc["gradings"]["unparsed"] == 0  # the grading stands; its match is not judged
    assert doc["matching"] == {"judged": 0, "unparsed": 0, "missing": 1}
    judge["reply"] = '```json\n{"matches": [0]}\n```'
    assert grade(data, out, stub_server.url, "--papers", papers) == 0
    doc = report(out, capsys)
    assert doc["matching"] == {"judged": 1, "unparsed": 0, "missing": 0}
    assert doc["error_finding"]["locations"][0]["precision"] == 1.0


@pytest.mark.parametrize("shape", ["content_list", "choices_null", "lone_surrogate"])
def test_generate_stops_on_a_malformed_reply_with_one_line_and_keeps_the_rest(
    shape: str, tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    """`generate` (and `run`) share the client: a malformed reply is a one-line error, the
    completions that arrived are kept, and a re-run asks only for what is missing."""
    reply, why = MALFORMED[shape]
    stub_server.script("`p`", ["```ocaml\nARITH_TAC\n```"])
    stub_server.script("`q`", [reply])
    bench = write_jsonl(
        tmp_path / "bench.jsonl",
        [{"id": "p", "statement": "`p`"}, {"id": "q", "statement": "`q`"}],
    )
    run = tmp_path / "run"
    args = ["generate", str(bench), "--out", str(run), "--model", "m"]
    args += ["--base-url", stub_server.url, "--concurrency", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"proofeval: error: {stub_server.url}: problem q: malformed reply: {why}"
    )
    rows = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in rows] == ["p"]
    stub_server.script("`q`", ["fine"])
    assert main(args) == 0
    assert stub_server.requests[-1].key == "`q`"


def test_the_client_hands_a_malformed_reply_to_its_caller_and_goes_on(
    stub_server: StubServer,
) -> None:
    stub_server.script("bad", [chat(content=["x"])])
    settings = SamplingSettings(model="m", base_url=stub_server.url, concurrency=1)
    outputs, failures = [], []
    a, b = Problem(id="a", statement=""), Problem(id="b", statement="")
    Generator(settings).generate(
        [(a, "bad", [0, 1]), (b, "ok", [0])],
        outputs.append,
        lambda problem, samples, why: failures.append((problem.id, samples, why)),
    )
    assert failures == [("a", (0, 1), '"content" is a list, not a string')]
    assert [(g.problem_id, g.output) for g in outputs] == [("b", "```ocaml\nNO_TAC\n```")]
