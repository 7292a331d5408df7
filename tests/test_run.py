"""`proofeval run` end to end: a real HTTP server speaking the OpenAI API (tests/openai_stub.py),
the real HOL Light, a real SQLite store; killed half way and resumed; pass@k by hand."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.generate.client import SamplingSettings
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from proofeval.report.run_data import load_run
from proofeval.runs.check import CheckOptions, run_check
from proofeval.runs.generate import GenerateOptions, run_generate
from proofeval.runs.stream import RunOptions, run_pipeline
from proofeval.store import RunStore
from tests.openai_stub import StubServer
from tests.test_cli_check import count_verdicts, wait_for_verdicts

OK, WRONG, CHEAT = "```ocaml\nARITH_TAC\n```", "```ocaml\nALL_TAC\n```", "```ocaml\nCHEAT_TAC\n```"
SET_OK = "The intersection commutes, so:\n```ocaml\nSET_TAC[]\n```\nThis closes the goal."
SYNTAX = "```ocaml\nSET_TAC[\n```"

# id: (category, statement, the 4 samples the server answers, in order)
PROBLEMS = {
    "a1": ("arith", "`!n. n + 0 = n`", [OK, OK, OK, OK]),
    "a2": ("arith", "`!m n. m + n = n + m`", [OK, WRONG, WRONG, WRONG]),
    "l1": ("logic", "`!p q. p /\\ q ==> q /\\ p`", [WRONG] * 4),
    "l2": ("logic", "`!s t:A->bool. s INTER t = t INTER s`", [SET_OK, CHEAT, SET_OK, SYNTAX]),
}
EXPECTED = {
    "a1": ["OK"] * 4,
    "a2": ["OK", "FAIL", "FAIL", "FAIL"],
    "l1": ["FAIL"] * 4,
    "l2": ["OK", "CHEATING", "OK", "ERROR"],
}
# By hand, n = 4 per problem, c = 4, 1, 0, 2:
#   pass@1 = mean(c/n) = (1 + 1/4 + 0 + 1/2) / 4 = 7/16
#   pass@2 = mean(1 - C(n-c,2)/C(4,2)) = (1 + (1 - 3/6) + 0 + (1 - 1/6)) / 4 = 7/12
#   pass@4 = (1 + 1 + 0 + 1) / 4 = 3/4
#   arith: pass@1 5/8, pass@2 3/4, pass@4 1; logic: pass@1 1/4, pass@2 5/12, pass@4 1/2
PASS_AT_K = {"1": 7 / 16, "2": 7 / 12, "4": 3 / 4}
BY_CATEGORY = {
    "arith": {"1": 5 / 8, "2": 3 / 4, "4": 1.0},
    "logic": {"1": 1 / 4, "2": 5 / 12, "4": 0.5},
}
# pass@1 standard error: rates 1, 1/4, 0, 1/2 around 7/16: squared deviations
#   81/256 + 9/256 + 49/256 + 1/256 = 35/64, sample variance 35/192, over 4 problems.
STDERR = math.sqrt(35 / 192 / 4)


def write_bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    rows = [{"id": i, "category": c, "statement": s} for i, (c, s, _) in PROBLEMS.items()]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def script(server: StubServer, delayed: tuple[str, ...] = ()) -> None:
    for pid, (_, statement, answers) in PROBLEMS.items():
        delays = [600.0] if pid in delayed else []
        failures = [429] if pid == "a2" else []
        server.script(statement, answers, delays=delays, failures=failures)


def verdicts(run: Path) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for row in load_run(run).results:
        out.setdefault(row.problem_id, []).append(row.verdict and row.verdict.value)
    return out


def sampling(server: StubServer) -> SamplingSettings:
    return SamplingSettings(model="stub", base_url=server.url, samples=4, backoff_base=0.01)


def run_in_process(bench: Path, run: Path, server: StubServer, base: WarmProcess) -> None:
    opts = RunOptions(bench, run, sampling(server), settings=CheckSettings(workers=2))
    run_pipeline(opts, warm={"hol-light": base})


def report_json(run: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["report", str(run), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_killed_half_way_resumes_to_the_same_result(
    hol_base: WarmProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, run = write_bench(tmp_path), tmp_path / "run"
    with StubServer() as server:
        script(server, delayed=("l1", "l2"))  # answered only after the kill
        stderr = tmp_path / "stderr.txt"
        cmd = [sys.executable, "-m", "proofeval.cli", "run", str(bench), "--out", str(run),
               "--model", "stub", "--base-url", server.url, "--samples", "4",
               "--workers", "1"]  # fmt: skip
        with stderr.open("w") as err:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
            )
        try:
            wait_for_verdicts(run / "proofeval.sqlite", at_least=4, limit=900)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kept = count_verdicts(run / "proofeval.sqlite")
        assert 4 <= kept <= 8, "only a1 and a2 were generated before the kill"
        shown = stderr.read_text()
        assert "generated=8" in shown and "solved=" in shown  # the progress display

        asked_a = server.count(PROBLEMS["a1"][1])
        run_in_process(bench, run, server, hol_base)
        assert server.count(PROBLEMS["a1"][1]) == asked_a  # nothing generated twice
        assert server.count(PROBLEMS["a2"][1]) == 2  # one 429, then the answer
    assert verdicts(run) == EXPECTED

    with StubServer() as server:  # the same run, never interrupted
        script(server)
        run_in_process(bench, tmp_path / "straight", server, hol_base)
    assert verdicts(tmp_path / "straight") == EXPECTED

    doc = report_json(run, capsys)
    assert doc["ks"] == [1, 2, 4]
    assert doc["pass_at_k"] == pytest.approx(PASS_AT_K)
    assert doc["pass_at_1"]["mean"] == pytest.approx(7 / 16)
    assert doc["pass_at_1"]["stderr"] == pytest.approx(STDERR)
    assert set(doc["categories"]) == set(BY_CATEGORY)
    for name, expected in BY_CATEGORY.items():
        assert doc["categories"][name]["pass_at_k"] == pytest.approx(expected)
    assert doc["verdicts"] == {"OK": 7, "FAIL": 7, "CHEATING": 1, "TIMEOUT": 0, "ERROR": 1}
    assert doc["generation"]["completions"] == 16

    rows = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [r["proof_status"] for r in rows] == [v for vs in EXPECTED.values() for v in vs]
    assert rows[12]["answer"] == "SET_TAC[]" and rows[12]["generation"] == SET_OK


def test_generate_then_check_gives_the_verdicts_of_run(
    hol_base: WarmProcess, tmp_path: Path
) -> None:
    bench, run = write_bench(tmp_path), tmp_path / "run"
    with StubServer() as server:
        script(server)
        summary = run_generate(GenerateOptions(bench, run, sampling(server)))
    assert summary.generated == 16
    opts = CheckOptions(bench, run, answers=summary.answers, settings=CheckSettings(workers=2))
    run_check(opts, warm={"hol-light": hol_base})
    assert verdicts(run) == EXPECTED
    store = RunStore(run)
    try:  # the attempts `check` read are the ones `generate` stored: same index, same output
        assert len(store.attempts()) == 16
        assert {a.output for a in store.attempts() if a.problem_id == "l2"} >= {SET_OK, CHEAT}
    finally:
        store.close()
