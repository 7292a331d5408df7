"""The s2n-bignum-bench layout: <dir>/<problem-id>/{setup.ml, query.txt, answer.txt}.

Optional per problem: answer.txt (one shipped answer) and category.txt (one line).
Subdirectories with neither setup.ml nor query.txt, and top-level files (problems.json,
timeout-map.json, timeouts.json), are not problems and are ignored.
"""

from __future__ import annotations

from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.loaders.answers import number_attempts
from proofeval.model import Attempt, Problem

PROVER = "hol-light"


def load(directory: Path, benchmark: str) -> tuple[list[Problem], list[Attempt]]:
    """The problems in `directory`, sorted by id, and the answers shipped beside them."""
    problems, answers = [], []
    for sub in sorted(directory.iterdir(), key=lambda p: p.name):
        if not is_problem(sub):
            continue
        problems.append(_problem(sub, benchmark))
        answer = sub / "answer.txt"
        if answer.is_file():
            answers.append((sub.name, read_text(answer)))
    if not problems:
        raise InputError(
            f"{directory}: no problems: expected subdirectories <problem-id>/ with setup.ml "
            "and query.txt"
        )
    return problems, number_attempts(answers)


def is_problem(sub: Path) -> bool:
    return sub.is_dir() and ((sub / "setup.ml").exists() or (sub / "query.txt").exists())


def _problem(sub: Path, benchmark: str) -> Problem:
    for required in ("setup.ml", "query.txt"):
        if not (sub / required).exists():
            raise InputError(f"problem {sub.name} has no {required} ({sub})")
    statement = read_text(sub / "query.txt").strip()
    if not statement:
        raise InputError(f"{sub / 'query.txt'}: empty: problem {sub.name} has no statement")
    return Problem(
        id=sub.name,
        statement=statement,
        prover=PROVER,
        benchmark=benchmark,
        category=_category(sub / "category.txt"),
        header=read_text(sub / "setup.ml"),
        directory=str(sub.absolute()),
    )


def _category(path: Path) -> str:
    if not path.exists():
        return "uncategorized"
    category = read_text(path).strip()
    if "\n" in category:
        raise InputError(f"{path}: expected one line, the problem's category")
    return category or "uncategorized"
