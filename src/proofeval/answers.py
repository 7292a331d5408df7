"""Read answers to check: a CSV or JSONL file of (problem id, raw model output) rows."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.generate.extract import extract_proof
from proofeval.model import Attempt

ANSWER_KEYS = ("answer", "output", "generation")


def number_attempts(pairs: Iterable[tuple[str, str]]) -> list[Attempt]:
    """One attempt per (problem id, raw output); indices count each problem's attempts from 0."""
    seen: Counter[str] = Counter()
    attempts = []
    for problem_id, output in pairs:
        attempts.append(Attempt(problem_id, seen[problem_id], output, extract_proof(output)))
        seen[problem_id] += 1
    return attempts


def read_answers(path: Path, problem_ids: set[str]) -> tuple[list[Attempt], list[str]]:
    """The attempts in `path` for the given problems, and warnings about the rows skipped."""
    if path.suffix == ".csv":
        rows = _csv_rows(path, read_text(path))
    elif path.suffix == ".jsonl":
        rows = _jsonl_rows(path, read_text(path))
    elif not path.exists():
        raise InputError(f"no such file: {path}")
    else:
        raise InputError(f"{path}: unknown answers format: expected a .csv or .jsonl file")
    kept: list[tuple[str, str]] = []
    unknown: Counter[str] = Counter()
    for problem_id, output in rows:
        if problem_id in problem_ids:
            kept.append((problem_id, output))
        else:
            unknown[problem_id] += 1
    warnings = [
        f"{path}: skipped {count} answer{'s' * (count > 1)} for unknown problem {pid!r}"
        for pid, count in unknown.items()
    ]
    return number_attempts(kept), warnings


def _csv_rows(path: Path, text: str) -> list[tuple[str, str]]:
    # No field can be longer than the file; the default limit (128 KiB) is too small for proofs.
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    rows = _csv_records(path, text)
    first = next(rows, None)
    if first is None:
        raise InputError(f"{path}: empty: expected a header row with problem_id and answer")
    header_line, header = first
    columns = [name.strip() for name in header]
    missing = [name for name in ("problem_id", "answer") if name not in columns]
    if missing:
        raise InputError(f"{path}:{header_line}: header has no {' or '.join(missing)} column")
    id_col, answer_col = columns.index("problem_id"), columns.index("answer")
    pairs = []
    for line, fields in rows:
        if len(fields) != len(columns):
            raise InputError(
                f"{path}:{line}: {len(fields)} fields where the header has {len(columns)}"
            )
        pairs.append((_problem_id(path, line, fields[id_col]), fields[answer_col]))
    return pairs


def _csv_records(path: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """(first line number, fields) of each non-blank CSV record."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    while True:
        line = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"{path}:{line}: malformed CSV: {exc}") from None
        if fields:
            yield line, fields


def jsonl_objects(path: Path, text: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSONL file's text."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: malformed JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            kind = type(row).__name__
            raise InputError(f"{path}:{number}: expected a JSON object, not {kind}")
        yield number, row


def _jsonl_rows(path: Path, text: str) -> list[tuple[str, str]]:
    return [
        (_problem_id(path, number, row.get("problem_id")), _answer(f"{path}:{number}", row))
        for number, row in jsonl_objects(path, text)
    ]


def _problem_id(path: Path, line: int, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{path}:{line}: problem_id must be a non-empty string")
    return value.strip()


def _answer(where: str, row: dict) -> str:
    for key in ANSWER_KEYS:
        if key in row:
            if not isinstance(row[key], str):
                raise InputError(f"{where}: {key} must be a string")
            return row[key]
    raise InputError(f"{where}: no answer field ({', '.join(ANSWER_KEYS)})")
