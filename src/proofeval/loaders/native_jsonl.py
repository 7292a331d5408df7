"""proofeval's own problem format: JSONL, one problem object per line.

Fields: id and statement (required, non-empty strings); prover ("hol-light"), category
("uncategorized"), header (""), reference and directory (optional strings); timeout (a
positive number of seconds, or null). A null optional field means its default; unknown fields
are ignored. A relative directory is taken relative to the JSONL file's directory.

NeMo-Skills' field names are read too: `name` for id and `formal_statement` for statement
(with `header` as above, and `split` as the category when there is no `category`); a row
with `formal_statement` is a Lean 4 problem unless it names its prover, as NeMo-Skills'
formal-math datasets are.

A prover must be one proofeval knows: a misspelt one ("hol_light", "Coq") is an input error
that names the prover meant.
"""

from __future__ import annotations

from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.loaders.answers import jsonl_objects
from proofeval.model import Problem
from proofeval.provers.registry import canonical, prover_error
from proofeval.timeouts import is_seconds


def load(path: Path, benchmark: str) -> list[Problem]:
    """The problems of a JSONL file, in file order."""
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for number, row in jsonl_objects(path, read_text(path)):
        where = f"{path}:{number}"
        problem = _problem(where, row, path.parent, benchmark)
        if problem.id in first_line:
            raise InputError(
                f"{where}: duplicate id {problem.id!r} (first on line {first_line[problem.id]})"
            )
        first_line[problem.id] = number
        problems.append(problem)
    if not problems:
        raise InputError(f"{path}: no problems: expected one JSON object per line")
    return problems


def _problem(where: str, row: dict, base: Path, benchmark: str) -> Problem:
    directory = _string(where, row, "directory", "")
    nemo = "statement" not in row and "formal_statement" in row
    prover = _string(where, row, "prover", "lean4" if nemo else "hol-light")
    error = prover_error(prover)
    if error is not None:
        raise InputError(f"{where}: {error}")
    prover = canonical(prover)  # "rocq" is "coq" everywhere after loading
    category = "split" if "category" not in row and nemo else "category"
    return Problem(
        id=_required(where, row, "name" if "id" not in row and "name" in row else "id"),
        statement=_required(where, row, "formal_statement" if nemo else "statement"),
        prover=prover,
        benchmark=benchmark,
        category=_string(where, row, category, "uncategorized"),
        header=_string(where, row, "header", ""),
        directory=str((base / directory).absolute()) if directory else "",
        timeout=_timeout(where, row.get("timeout")),
        reference=_optional(where, row, "reference"),
        coq_toolchain=_string(where, row, "coq_toolchain", ""),
    )


def _required(where: str, row: dict, key: str) -> str:
    value = _string(where, row, key, "").strip()
    if not value:
        raise InputError(f"{where}: missing {key}")
    return value


def _string(where: str, row: dict, key: str, default: str) -> str:
    value = _optional(where, row, key)
    return default if value is None else value


def _optional(where: str, row: dict, key: str) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string, not {type(value).__name__}")
    return value


def _timeout(where: str, value: object) -> float | None:
    if value is None:
        return None
    if not is_seconds(value):
        raise InputError(f"{where}: timeout must be a positive number of seconds or null")
    return float(value)
