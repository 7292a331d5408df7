"""`--only` and `--limit` mean the same on every command that reads a benchmark: the
problems an id or glob names, then the first N of them in the benchmark's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofeval.cli import main, parser
from proofeval.loaders import Selection, load_benchmark

DEMO = Path(__file__).resolve().parents[1] / "src" / "proofeval" / "demo" / "problems.jsonl"
READERS = ("check", "run", "generate", "validate", "problems", "prompts", "baseline", "mcp",
           "profile")  # fmt: skip


def test_limit_keeps_the_first_problems_after_only() -> None:
    every = [p.id for p in load_benchmark(DEMO).problems]
    coq = [pid for pid in every if pid.startswith("coq-")]
    limited = load_benchmark(DEMO, Selection(only=("coq-*",), limit=3))
    assert [p.id for p in limited.problems] == coq[:3]
    assert limited.unselected == frozenset(every) - set(coq[:3])
    assert len(load_benchmark(DEMO, Selection(limit=10_000)).problems) == len(every)


def test_the_problems_command_lists_what_only_and_limit_keep(capsys) -> None:
    assert main(["problems", str(DEMO), "--only", "coq-*", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("coq-") for line in lines)


@pytest.mark.parametrize("command", READERS)
def test_every_command_that_reads_a_benchmark_takes_only_and_limit(command: str) -> None:
    sub = next(a for a in parser()._subparsers._group_actions if a.dest == "command")
    options = {o for action in sub.choices[command]._actions for o in action.option_strings}
    assert {"--only", "--limit"} <= options


def test_a_limit_that_is_not_positive_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["problems", str(DEMO), "--limit", "0"])
    assert "--limit: must be positive" in capsys.readouterr().err


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("proofeval 0.")
