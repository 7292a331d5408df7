"""The HTML report of a real `run --agent` (the stub HTTP server plays the model of
tests/test_agent.py, real coqtop checks): each conversation is on the page with its tool calls
and results, and headless Chromium opens one from a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofeval.cli import main
from tests import test_agent
from tests.test_agent import PROBLEMS
from tests.test_report_html import chromium_needed, dom, opened, parsed, screenshot

pytestmark = pytest.mark.coq

agent_run = test_agent.agent_run  # the run the page reports: tests/test_agent.py's fixture


@pytest.fixture
def page(agent_run: Path, tmp_path: Path) -> Path:
    assert main(["report", str(agent_run), "--html", str(tmp_path / "html")]) == 0
    return tmp_path / "html" / "index.html"


def test_every_conversation_is_on_the_page(page: Path) -> None:
    text = page.read_text()
    tags = parsed(text)
    ids = [a["id"] for t, a in tags.starts if t == "details" and "transcript" in a["class"]]
    assert ids == [f"transcript-{pid}~A~0" for pid in sorted(PROBLEMS)]
    add0 = text[text.index('id="transcript-coq.add0~A~0"') : text.index('id="transcript-coq.le~')]
    # the hostile calls and the tactic the policy denied, each answered with an error
    assert "tool rm_rf · call0" in add0 and "no tool &#x27;rm_rf&#x27;" in add0
    assert "{not json" in add0 and "not valid JSON" in add0
    assert "Admitted." in add0 and "CHEATING" in add0
    assert "tool submit" in add0
    loop = text[text.index('id="transcript-coq.loop~A~0"') :]
    assert "budget of 9 tool calls" in loop
    assert "Agent: 4 conversations" in text
    assert tags.count("details") == tags.ends.count("details")


@chromium_needed
def test_a_link_opens_the_conversation_in_headless_chromium(page: Path, tmp_path: Path) -> None:
    url = page.as_uri() + "#transcript-coq.add0~A~0"
    tags = dom(url, tmp_path, "agent")
    assert opened(tags) == ["problem-coq.add0", "transcript-coq.add0~A~0"]
    screenshot(url, tmp_path, "agent")
