"""Read answers to check: a CSV or JSONL file of (problem id, raw model output) rows."""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class AnswerRow:
    """One row of an answers file: `answer` holds the proof (fenced or bare); `output` the
    model's whole completion when the file has it (as `proofeval generate` writes it)."""

    problem_id: str
    answer: str
    output: str
    sample: int | None
    where: str


def _attempts(rows: Iterable[AnswerRow]) -> list[Attempt]:
    """Rows with a `sample` keep it as their index; the others count from 0 per problem."""
    seen: Counter[str] = Counter()
    taken: dict[tuple[str, int], str] = {}
    attempts = []
    for row in rows:
        index = seen[row.problem_id] if row.sample is None else row.sample
        seen[row.problem_id] += 1
        if (row.problem_id, index) in taken:
            raise InputError(
                f"{row.where}: attempt {index} of {row.problem_id} is also given at "
                f"{taken[row.problem_id, index]}"
            )
        taken[row.problem_id, index] = row.where
        attempts.append(Attempt(row.problem_id, index, row.output, extract_proof(row.answer)))
    return attempts


@dataclass(frozen=True)
class ReadAnswers:
    """The attempts an answers file holds for the problems asked about; how many rows it
    has for each id the benchmark does not know; how many for problems left out on purpose."""

    attempts: list[Attempt]
    unknown: Counter[str]
    left_out: int = 0


def read_answers(
    path: Path, problem_ids: set[str], left_out: frozenset[str] = frozenset()
) -> ReadAnswers:
    """The attempts in `path` for the given problems. Rows for `left_out` ids (problems of
    the benchmark not selected) are dropped and counted; the other ids are unknown."""
    if path.suffix == ".csv":
        rows = _csv_rows(path, read_text(path))
    elif path.suffix == ".jsonl":
        rows = _jsonl_rows(path, read_text(path))
    elif not path.exists():
        raise InputError(f"no such file: {path}")
    else:
        raise InputError(f"{path}: unknown answers format: expected a .csv or .jsonl file")
    kept: list[AnswerRow] = []
    unknown: Counter[str] = Counter()
    dropped = 0
    for row in rows:
        if row.problem_id in problem_ids:
            kept.append(row)
        elif row.problem_id in left_out:
            dropped += 1
        else:
            unknown[row.problem_id] += 1
    return ReadAnswers(_attempts(kept), unknown, dropped)


SHOWN_UNKNOWN = 5


def unknown_summary(path: Path, unknown: Counter[str], known: Iterable[str]) -> str:
    """One line for the answers whose id the benchmark does not know: how many, a few
    ids, and the id each probably meant ("did you mean")."""
    rows = sum(unknown.values())
    ids = sorted(unknown)
    names = sorted(known)
    shown = []
    for pid in ids[:SHOWN_UNKNOWN]:
        close = difflib.get_close_matches(pid, names, n=1, cutoff=0.8)
        shown.append(f"{pid!r} (did you mean {close[0]!r}?)" if close else repr(pid))
    more = ", ..." if len(ids) > SHOWN_UNKNOWN else ""
    return (
        f"{path}: {rows} answer{'s' * (rows != 1)} for {len(ids)} unknown problem "
        f"id{'s' * (len(ids) != 1)}: {', '.join(shown)}{more}"
    )


def _csv_rows(path: Path, text: str) -> list[AnswerRow]:
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
        answer = fields[answer_col]
        pid = _problem_id(path, line, fields[id_col])
        pairs.append(AnswerRow(pid, answer, answer, None, f"{path}:{line}"))
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
        yield number, _text_only(row)


def _text_only(value: Any) -> Any:
    """`value` with each lone surrogate (JSON's "\\ud800", which is no character and
    cannot be stored or written) replaced by U+FFFD, as a decoder replaces a bad byte."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_text_only(v) for v in value]
    if isinstance(value, dict):
        return {_text_only(k): _text_only(v) for k, v in value.items()}
    return value


def _jsonl_rows(path: Path, text: str) -> list[AnswerRow]:
    return [_jsonl_row(path, number, row) for number, row in jsonl_objects(path, text)]


def _jsonl_row(path: Path, number: int, row: dict) -> AnswerRow:
    where = f"{path}:{number}"
    answer = _answer(where, row)
    output = next((row[k] for k in ("output", "generation") if isinstance(row.get(k), str)), answer)
    sample = row.get("sample")
    if sample is not None and (type(sample) is not int or sample < 0):
        raise InputError(f"{where}: sample must be a non-negative integer")
    return AnswerRow(
        _problem_id(path, number, row.get("problem_id")), answer, output, sample, where
    )


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
