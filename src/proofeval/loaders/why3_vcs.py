"""A benchmark of verification conditions `build why3` or `build frama-c` wrote
(builders/why3_vcs.py): its manifest and its problems."""

from __future__ import annotations

import json
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.model import Problem
from proofeval.provers.coq.policy import DECLARATIONS
from proofeval.provers.coq.sentences import SentenceError, split

MANIFEST = "why3-vcs.json"
FORMAT = "proofeval-why3-vcs"
VC_DIR = "vcs"


def is_why3_vcs(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def manifest(path: Path) -> dict:
    try:
        data = json.loads(read_text(path / MANIFEST))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path / MANIFEST}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{path / MANIFEST}: not a {FORMAT} manifest")
    return data


def load(path: Path, name: str) -> list[Problem]:
    """The problems of a benchmark `build` wrote, in manifest order."""
    root = path.resolve()
    problems = []
    for entry in manifest(path)["problems"]:
        file = (root / entry["file"]).resolve()
        if not file.is_relative_to(root):
            raise InputError(f"{path / MANIFEST}: {entry['file']} is outside the benchmark")
        header, statement = split_vc(read_text(file), file)
        problems.append(
            Problem(
                id=entry["id"],
                statement=statement,
                prover="coq",
                benchmark=name,
                category=entry["category"],
                header=header,
                directory=str(root),
            )
        )
    return problems


def split_vc(text: str, where: Path | str) -> tuple[str, str]:
    """(header, statement) of a VC file: the statement is its last Theorem sentence."""
    try:
        sentences = split(text)
    except SentenceError as exc:
        raise InputError(f"{where}: {exc}") from None
    goals = [s for s in sentences if (s.code.split() or [""])[0] in DECLARATIONS]
    if not goals:
        raise InputError(f"{where}: Why3 printed no Theorem")
    goal = goals[-1]
    return text[: goal.start], goal.text + "."
