"""An s2n-bignum-bench build: problems.json, and the ml files its inlined_locations name.

problems.json maps each problem id to {category, query, inlined_locations, ...}; the
first inlined location [file, n] gives the context: the first n lines of that file (an
inlined source with every proof replaced by CHEAT_TAC), as retrieve-problem.py writes
setup.ml. A relative file is taken relative to problems.json's directory; where it is
missing, the problem's <id>/setup.ml is used instead. Contexts of one file are prefixes
of one another, so the checker loads each file once, up to each problem in turn.

Proofs run where the official runner runs them (objfiles/, beside problems.json, which
holds the assembled code that s2n-bignum's proofs read), else in the development's root
that `proofeval build` recorded, else beside problems.json. references.jsonl
({problem_id, answer}), when present, gives each problem's reference proof; answer.txt
files in <id>/ are shipped answers. timeout-map.json and timeouts.json beside
problems.json are read by the checker's timeout policy.
"""

from __future__ import annotations

import json
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.loaders.answers import jsonl_objects, number_attempts
from proofeval.model import Attempt, Problem
from proofeval.provers.hol_light.sources import decode

BUILD_INFO = "proofeval-build.json"  # what `build` wrote it from
REFERENCES = "references.jsonl"
PROBLEMS = "problems.json"

PROVER = "hol-light"
OBJFILES = "objfiles"


def is_official(directory: Path) -> bool:
    """Whether problems.json beside the problems holds them (an empty one does not:
    the <id>/ subdirectories do)."""
    path = directory / PROBLEMS
    if not path.is_file():
        return False
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError:
        return True  # load() says what is wrong with it
    return not isinstance(data, dict) or bool(data)


def load(directory: Path, benchmark: str) -> tuple[list[Problem], list[Attempt]]:
    """The problems of problems.json, sorted by id, and any answer.txt shipped beside."""
    entries = _entries(directory / PROBLEMS)
    references = _references(directory / REFERENCES)
    workdir = _workdir(directory)
    files = _Lines(directory)
    problems, answers = [], []
    for pid in sorted(entries):
        where = f"{directory / PROBLEMS}: {pid}"
        entry = entries[pid]
        problems.append(
            Problem(
                id=pid,
                statement=_query(where, entry),
                prover=PROVER,
                benchmark=benchmark,
                category=_string(where, entry, "category") or "uncategorized",
                header=files.setup(where, pid, entry.get("inlined_locations")),
                directory=str(workdir),
                reference=references.get(pid),
            )
        )
        answer = directory / pid / "answer.txt"
        if _directory_name(pid) and answer.is_file():
            answers.append((pid, read_text(answer)))
    return problems, number_attempts(answers)


def _directory_name(pid: str) -> bool:
    """Whether <pid>/ can be the problem's own directory beside problems.json: an id is
    taken as it is (primes and all), but never as a path that leads elsewhere."""
    return bool(pid) and "/" not in pid and "\0" not in pid and pid not in (".", "..")


def _entries(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: expected a JSON object {{problem id: problem}}")
    for pid, entry in data.items():
        if not isinstance(entry, dict):
            raise InputError(f"{path}: {pid}: expected an object")
    return data


def _string(where: str, entry: dict, key: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string")
    return value


def _query(where: str, entry: dict) -> str:
    query = _string(where, entry, "query").strip()
    if not query:
        raise InputError(f"{where}: no query")
    return query


def _references(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    refs = {}
    for number, row in jsonl_objects(path, read_text(path)):
        pid, answer = row.get("problem_id"), row.get("answer")
        if not isinstance(pid, str) or not isinstance(answer, str):
            raise InputError(f"{path}:{number}: expected {{problem_id, answer}} strings")
        refs[pid] = answer
    return refs


def _workdir(directory: Path) -> Path:
    if (directory / OBJFILES).is_dir():
        return (directory / OBJFILES).absolute()
    info = directory / BUILD_INFO
    if info.is_file():
        root = json.loads(read_text(info)).get("root")
        if isinstance(root, str) and Path(root).is_dir():
            return Path(root)
    return directory.absolute()


class _Lines:
    """The ml files that contexts are cut from, each read once."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.cache: dict[Path, list[str]] = {}

    def setup(self, where: str, pid: str, locations: object) -> str:
        if not isinstance(locations, list) or not locations:
            return self._fallback(where, pid, "no inlined_locations")
        first = locations[0]
        if (
            not isinstance(first, list)
            or len(first) != 2
            or not isinstance(first[0], str)
            or not isinstance(first[1], int)
        ):
            raise InputError(f"{where}: an inlined location must be [file, line count]")
        path = self.directory / first[0]
        if not path.is_file():
            return self._fallback(where, pid, f"no file {path}")
        lines = self._lines(path)
        if not 0 <= first[1] <= len(lines):
            raise InputError(f"{where}: {path} has {len(lines)} lines, not {first[1]}")
        return "".join(lines[: first[1]])

    def _lines(self, path: Path) -> list[str]:
        if path not in self.cache:
            self.cache[path] = decode(path.read_bytes()).splitlines(keepends=True)
        return self.cache[path]

    def _fallback(self, where: str, pid: str, why: str) -> str:
        if not _directory_name(pid):
            raise InputError(f"{where}: {why}, and the id names no directory of its own")
        setup = self.directory / pid / "setup.ml"
        if not setup.is_file():
            raise InputError(f"{where}: {why}, and no {setup}")
        return decode(setup.read_bytes())
