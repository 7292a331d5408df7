"""SIGTERM ends a command as Ctrl-C does: at once, the finished verdicts kept, and no
scratch directory or prover process left behind (the real Coq, `proofeval check` in a
process of its own)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofeval.report.run_data import load_run

pytestmark = pytest.mark.coq

DEMO = Path(__file__).resolve().parents[1] / "src" / "proofeval" / "demo"


def test_sigterm_stops_a_check_and_leaves_nothing_behind(tmp_path: Path, scratch: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "proofeval.cli", "check", str(DEMO / "problems.jsonl"),
               "--answers", str(DEMO / "answers.jsonl"), "--only", "coq-*", "--workers", "1",
               "--out", str(out)]  # fmt: skip
    env = os.environ | {"TMPDIR": str(scratch)}
    check = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not list(scratch.glob("proofeval-coq-*")):  # until the checker has made its scratch
        assert check.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(2)
    check.send_signal(signal.SIGTERM)
    _, err = check.communicate(timeout=60)
    assert check.returncode == 130, err
    assert "interrupted; finished verdicts are kept" in err
    assert not list(scratch.iterdir())
    checked = [row for row in load_run(out).results if row.verdict is not None]
    assert len(checked) < 19  # stopped before the end, the finished verdicts kept
