"""Errors the command line reports as one line, never as a traceback."""

from __future__ import annotations

from pathlib import Path


class CheckerError(RuntimeError):
    """The prover process failed (would not start, died, hung), not the proof."""


class InputError(Exception):
    """Bad user input: a missing file, a malformed line, a missing tool."""


def read_text(path: Path) -> str:
    """The text of a user's file; InputError naming it if it is unreadable or not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}:{line}: not UTF-8 text") from None
    return text.removeprefix("\ufeff")
