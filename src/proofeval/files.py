"""Writing output files so readers see the old file or the whole new one, never a part."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from proofeval.errors import InputError


def write_text_atomically(path: Path, text: str) -> None:
    """Write UTF-8 text to a temporary file beside `path`, then rename it over `path`."""
    # Not mkstemp: its files are private (0600); open() gives the user's usual permissions.
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_csv_atomically(path: Path, records: Iterable[Sequence[str]]) -> None:
    text = io.StringIO(newline="")
    csv.writer(text).writerows(records)
    write_text_atomically(path, text.getvalue())


def write_jsonl_atomically(path: Path, rows: Iterable[dict]) -> None:
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    write_text_atomically(path, "".join(lines))
