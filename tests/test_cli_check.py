"""`proofeval check` end to end: real HOL Light, real files, a real SQLite store."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import InputError
from proofeval.provers.hol_light.server import (
    WORKDIR_PREFIX,
    WarmProcess,
    remove_abandoned_workdirs,
)
from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

SETUP_DEFS = "let TWICE = new_definition `TWICE n = 2 * n`;;\n"


def s2n_layout(root: Path) -> Path:
    bench = root / "bench"
    problems = {
        "arith.add_0": ("", "`!n. n + 0 = n`", "arithmetic"),
        "arith.mul_1": ("", "`!n. n * 1 = n`", "arithmetic"),
        "defs.twice": (SETUP_DEFS, "`!n. TWICE n = n + n`", "definitions"),
    }
    for pid, (setup, query, category) in problems.items():
        d = bench / pid
        d.mkdir(parents=True)
        (d / "setup.ml").write_text(setup)
        (d / "query.txt").write_text(query + "\n")
        (d / "category.txt").write_text(category + "\n")
    return bench


def official_answers(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem_id", "category", "query", "answer"])
        for pid, answer in rows:
            w.writerow([pid, "", "", answer])
    return path


def read_results(run: Path) -> list[dict[str, str]]:
    with (run / "results.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_check_writes_every_verdict_and_resumes(
    hol_base: WarmProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = s2n_layout(tmp_path)
    answers = official_answers(
        tmp_path / "answers.csv",
        [
            (
                "arith.add_0",
                "Here it is:\n```ocaml\nINDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]\n```",
            ),
            ("arith.add_0", "REWRITE_TAC[]"),
            ("arith.mul_1", "CHEAT_TAC"),
            ("defs.twice", "REWRITE_TAC[TWICE] THEN ARITH_TAC"),
            ("no.such.problem", "ARITH_TAC"),
        ],
    )
    run = tmp_path / "run"
    opts = CheckOptions(
        problems=bench,
        answers=answers,
        out=run,
        official_csv=tmp_path / "official.csv",
        settings=CheckSettings(workers=2),
    )
    with pytest.raises(InputError, match="'no.such.problem'.*--allow-unknown"):
        run_check(opts, warm={"hol-light": hol_base})  # an unknown id: nothing checked
    assert not run.exists()
    opts = replace(opts, allow_unknown=True)
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert "no.such.problem" in capsys.readouterr().err
    got = {(r["problem_id"], r["attempt"]): r for r in read_results(run)}
    assert {k: v["verdict"] for k, v in got.items()} == {
        ("arith.add_0", "0"): "OK",
        ("arith.add_0", "1"): "FAIL",
        ("arith.mul_1", "0"): "CHEATING",
        ("defs.twice", "0"): "OK",
    }
    assert got[("defs.twice", "0")]["category"] == "definitions"
    assert got[("arith.mul_1", "0")]["stage"] == "precheck"
    official = (tmp_path / "official.csv").read_text().splitlines()
    assert official[0] == "Problem,Verdict"
    assert "arith.mul_1,CHEATING" in official

    again = run_check(opts, warm={"hol-light": hol_base})
    assert again == rows  # same seconds: nothing was checked a second time
    assert "already checked" in capsys.readouterr().err


def test_kill_9_loses_no_finished_verdict(hol_base: WarmProcess, tmp_path: Path) -> None:
    problems = tmp_path / "problems.jsonl"
    goal = "`(x + y + z) EXP 6 = (z + y + x) EXP 6`"
    problems.write_text(json.dumps({"id": "p", "category": "c", "statement": goal}) + "\n")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"problem_id": "p", "answer": "ARITH_TAC"}) + "\n" for _ in range(400))
    )
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "proofeval.cli",
        "check",
        str(problems),
        "--answers",
        str(answers),
        "--out",
        str(run),
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        done_before = wait_for_verdicts(run / "proofeval.sqlite", at_least=5, limit=600)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = count_verdicts(run / "proofeval.sqlite")
    assert kept >= done_before >= 5
    assert kept < 400, "the run finished before it could be killed"

    [abandoned] = [d for d in workdirs() if owner(d) == str(proc.pid)]
    remove_abandoned_workdirs()  # what the next launcher does first
    assert not abandoned.exists() and hol_base.launcher.workdir.exists()

    opts = CheckOptions(
        problems=problems, answers=answers, out=run, settings=CheckSettings(workers=2)
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert len(rows) == 400 and all(r.verdict == "OK" for r in rows)


def workdirs() -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"))


def owner(workdir: Path) -> str:
    try:
        return (workdir / "owner").read_text()
    except OSError:
        return ""


def count_verdicts(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            return sum(1 for _ in conn.execute("SELECT 1 FROM verdicts"))
        except sqlite3.OperationalError:
            return 0


def wait_for_verdicts(db: Path, at_least: int, limit: float) -> int:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        n = count_verdicts(db)
        if n >= at_least:
            return n
        time.sleep(0.2)
    raise AssertionError(f"fewer than {at_least} verdicts after {limit}s")


# --- bad input: one line, non-zero exit, never a traceback -------------------------


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_a_missing_directory_is_one_line(tmp_path: Path, capsys) -> None:
    code, err = run_cli(["check", str(tmp_path / "nope"), "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and err.count("\n") == 1 and "no such file" in err


def test_a_problem_without_query_is_named(tmp_path: Path, capsys) -> None:
    bench = s2n_layout(tmp_path)
    (bench / "arith.mul_1" / "query.txt").unlink()
    code, err = run_cli(["check", str(bench), "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and "arith.mul_1" in err and "query.txt" in err


def test_malformed_answers_name_the_line(tmp_path: Path, capsys) -> None:
    bench = s2n_layout(tmp_path)
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"problem_id": "arith.add_0", "answer": "ARITH_TAC"}\n{oops\n')
    code, err = run_cli(
        ["check", str(bench), "--answers", str(answers), "--out", str(tmp_path / "r")], capsys
    )
    assert code == 2 and "a.jsonl:2" in err


def test_non_utf8_is_refused(tmp_path: Path, capsys) -> None:
    bench = s2n_layout(tmp_path)
    (bench / "arith.add_0" / "query.txt").write_bytes(b"`\xff\xfe`")
    code, err = run_cli(["check", str(bench), "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and "UTF-8" in err


def test_every_command_has_help(capsys) -> None:
    for args in (["--help"], ["check", "--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        assert exit_info.value.code == 0
        assert "usage" in capsys.readouterr().out
