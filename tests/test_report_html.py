"""The HTML report: self-contained, model output escaped, and rendered by real headless
Chromium (a screenshot and the rendered DOM)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from proofeval.model import Attempt, Outcome, Problem, Stage, Verdict
from proofeval.report import plots
from proofeval.report.html import render, write_html
from proofeval.report.run_data import load_run
from proofeval.store import RunStore
from tests.test_metrics import build_store

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(1)">'


def hostile_store(run_dir: Path) -> Path:
    """A run whose model output, proof, message and ids all carry markup."""
    store = RunStore(run_dir)
    try:
        store.add_problems([Problem("p<b>1</b>", "`T` </pre><script>x()</script>", "hol-light")])
        attempt = Attempt("p<b>1</b>", 0, f"prose {HOSTILE}\n```\n{HOSTILE}\n```", HOSTILE)
        store.add_attempts([attempt])
        store.record(attempt, Outcome(Verdict.FAIL, Stage.CHECK, 0.1, f"Failure {HOSTILE}"))
    finally:
        store.close()
    return run_dir


def test_model_output_is_escaped(tmp_path: Path):
    page = render([load_run(hostile_store(tmp_path / "run"))])
    assert "<script" not in page.lower()
    assert "<img src=x" not in page
    assert "<b>1</b>" not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert "p&lt;b&gt;1&lt;/b&gt;" in page


def test_page_is_self_contained(tmp_path: Path):
    page = render([load_run(build_store(tmp_path / "run"))])
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    images = re.findall(r'<img src="data:image/png;base64,', page)
    assert len(images) == 3  # pass@k curve, pass@1 by category, verdicts by category


def test_plots_are_png_or_nothing(tmp_path: Path):
    m = load_run(build_store(tmp_path / "run")).metrics
    for png in (
        plots.pass_at_k_curve([("A", m)]),
        plots.category_bars([("A", m), ("B", m)]),
        plots.verdict_bars(m),
    ):
        assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    empty = load_run(build_store(tmp_path / "empty", {"p": ("x", [None])})).metrics
    assert plots.pass_at_k_curve([("A", empty)]) is None
    assert plots.category_bars([("A", empty)]) is None
    assert plots.verdict_bars(empty) is not None  # one attempt, unchecked


def chromium(page: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *mode,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium absent (`make install`)")
def test_page_renders_in_headless_chromium(tmp_path: Path):
    run = load_run(build_store(tmp_path / "a"))
    other = load_run(hostile_store(tmp_path / "b"))
    page = write_html([run, other], tmp_path / "html")

    shot = tmp_path / "shot.png"
    chromium(page, tmp_path / "profile1", f"--screenshot={shot}", "--window-size=1280,2000")
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    assert shot.stat().st_size > 20_000
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100  # text, tables, pictures: not flat
    background = max(colours)[0] / (1280 * 2000)
    assert background < 0.9

    dom = chromium(page, tmp_path / "profile2", "--dump-dom").stdout
    assert dom.count("<table") == 3  # A and B side by side, then each run's paper table
    assert dom.count('<img src="data:image/png;base64,') == 4  # curve, bars, verdicts of A, B
    for pid in ("a", "b", "c", "d", "e", "p&lt;b&gt;1&lt;/b&gt;"):
        assert f'<span class="pid">{pid}</span>' in dom
    assert "pass@2" in dom and "B-A" in dom
    assert "<script" not in dom.lower()
