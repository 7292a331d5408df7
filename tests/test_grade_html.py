"""The grading report's HTML: its figures are tables whose cells are the JSON report's numbers
(one row or column per run, two runs side by side), every text escaped; the real stub HTTP
server is the judge."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from proofeval.cli import main
from tests.grading_data import H2V_ROWS, write_jsonl
from tests.openai_stub import StubServer

HOSTILE_ID = "<u>p1</u>"


def answer(steps: list[str], first: int, verdict: str) -> str:
    doc = {"steps": steps, "first_error": first, "verdict": verdict}
    return f"```json\n{json.dumps(doc)}\n```"


class Tables(HTMLParser):
    """Each table's rows of cell texts, by the <h3> heading before it."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.tags: list[str] = []
        self._heading: list[str] | None = None
        self._title = ""
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        if tag == "h3":
            self._heading = []
        elif tag == "table":
            self.tables[self._title] = []
        elif tag == "tr" and self._title in self.tables:
            self.tables[self._title].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3" and self._heading is not None:
            self._title = self._heading[0].strip()  # not the note after it
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[self._title][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        for part in (self._heading, self._cell):
            if part is not None:
                part.append(data)


def tables(page: Path) -> Tables:
    found = Tables()
    found.feed(page.read_text())
    return found


def grading_run(tmp_path: Path, stub_server: StubServer, name: str, p1_again: str) -> Path:
    rows = [dict(H2V_ROWS[0], unique_id=HOSTILE_ID), H2V_ROWS[1]]
    stub_server.script(H2V_ROWS[0]["question"], [answer(["yes", "yes"], -1, "correct"), p1_again])
    stub_server.script(H2V_ROWS[1]["question"], [answer(["yes", "no", "no"], 1, "incorrect")] * 2)
    out = tmp_path / name
    data = write_jsonl(tmp_path / f"{name}.jsonl", rows)
    args = ["grade", data, "--model", "judge", "--base-url", stub_server.url, "--runs", 2]
    assert main([str(a) for a in [*args, "--out", out]]) == 0
    return out


def report_json(out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def test_the_metrics_are_tables_of_the_reports_numbers(
    tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    out = grading_run(tmp_path, stub_server, "run", "Looks fine to me.")
    doc = report_json(out, capsys)
    assert main(["report", str(out), "--html", str(tmp_path / "page")]) == 0
    found = tables(tmp_path / "page" / "index.html")
    t = found.tables
    assert t["Gradings"][1] == ["A", "baseline", "judge", "2", "2", "4", "1", "0", "0"]
    assert t["Failed gradings"] == [["reason", "A"], ["judge: no ```json block", "1"]]
    steps = doc["steps"]
    assert t["Rates"][1] == [
        "steps", "A", pct(steps["tpr"]), pct(steps["tnr"]), pct(steps["balanced_accuracy"]),
        pct(steps["balanced_f1"]), str(steps["positives"]), str(steps["negatives"]),
    ]  # fmt: skip
    assert [r[0] for r in t["Rates"][1:]] == ["steps", "responses", "first error"]
    per_run = t["Rates per run"][1:]
    assert len(per_run) == 3 * 2  # three figures, two grading runs each
    assert per_run[1][:4] == ["steps", "A", "1", pct(steps["per_run"][1]["tpr"])]
    curve = [(r[0], r[2], r[3], r[4]) for r in t["Error finding"][1:]]
    assert curve[:2] == [
        ("steps", str(p["k"]), pct(p["precision"]), pct(p["recall"]))
        for p in doc["error_finding"]["steps"]
    ]
    assert t["Cost"][1][:2] == ["A", str(doc["cost"]["calls"])]
    assert {r[1] for r in t["Cost by stage"][1:]} == set(doc["cost"]["by_stage"])
    assert "Location matching" not in t  # no paper in this run
    assert "script" not in found.tags and "u" not in found.tags  # the item id stayed text
    page = (tmp_path / "page" / "index.html").read_text()
    assert "&lt;u&gt;p1&lt;/u&gt;" in page
    assert "Content-Security-Policy\" content=\"default-src 'none'; img-src data:;" in page
    assert "script-src" not in page  # none allowed


def test_two_runs_side_by_side_never_pooled(
    tmp_path: Path, stub_server: StubServer, capsys
) -> None:
    a = grading_run(tmp_path, stub_server, "a", "Looks fine to me.")
    b = grading_run(tmp_path, stub_server, "b", "```json\n[1]\n```")
    docs = {"A": report_json(a, capsys), "B": report_json(b, capsys)}
    assert main(["report", str(a), str(b), "--html", str(tmp_path / "page")]) == 0
    t = tables(tmp_path / "page" / "index.html").tables
    assert [r[:2] for r in t["Gradings"][1:]] == [["A", "baseline"], ["B", "baseline"]]
    assert t["Failed gradings"] == [
        ["reason", "A", "B"],
        ["judge: no ```json block", "1", "0"],
        ["judge: the ```json block is not an object", "0", "1"],
    ]
    rates = {(r[0], r[1]): r[2:4] for r in t["Rates"][1:]}
    for label, doc in docs.items():
        for name, title in (("steps", "steps"), ("first_error", "first error")):
            assert rates[(title, label)] == [pct(doc[name]["tpr"]), pct(doc[name]["tnr"])]
    assert [r[0] for r in t["Cost"][1:]] == ["A", "B"]
    assert [r[:3] for r in t["Error finding"][1:3]] == [["steps", "A", "1"], ["steps", "B", "1"]]
