"""The strict machine-readable answers of the grading prompts.

Every prompt asks for one JSON object in a ```json fenced block at the end of the answer.
The parser takes the last such block; anything else (no block, not JSON, wrong keys or
types, JSON nested deeper than Python parses) raises Unparsed with a short reason, and the
grading counts as failed. A call whose reply was malformed is answered by a FailedCall,
which parses as Unparsed with the reply's fault.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BLOCK = re.compile(r"```json[ \t]*\n(.*?)```", re.DOTALL)


class Unparsed(Exception):
    """The answer is not in the format asked for; the message says how."""


class FailedCall(str):
    """The answer of a call whose reply was malformed (generate/reply.py): no text, and the
    reason. It is never stored, so a re-run asks that call again."""

    reason: str

    def __new__(cls, reason: str) -> FailedCall:
        call = super().__new__(cls, "")
        call.reason = reason
        return call


def failure(text: str) -> str | None:
    """Why the call that answered `text` failed, if it did."""
    return f"malformed reply: {text.reason}" if isinstance(text, FailedCall) else None


def json_answer(text: str) -> dict[str, Any]:
    """The object in the last ```json block of `text`."""
    if (why := failure(text)) is not None:
        raise Unparsed(why)
    blocks = _BLOCK.findall(text)
    if not blocks:
        raise Unparsed("no ```json block")
    try:
        value = json.loads(blocks[-1])
    except json.JSONDecodeError as exc:
        raise Unparsed(f"the ```json block is not JSON ({exc.msg})") from None
    except RecursionError:  # the C decoder stops cleanly at Python's recursion limit
        raise Unparsed("the ```json block is nested too deeply") from None
    if not isinstance(value, dict):
        raise Unparsed("the ```json block is not an object")
    return value


def yes_no_list(answer: dict, key: str = "steps") -> list[int]:
    """answer[key] as 1 (yes) / 0 (no) verdicts."""
    values = answer.get(key)
    if not isinstance(values, list) or not all(v in ("yes", "no") for v in values):
        raise Unparsed(f'"{key}" is not a list of "yes" and "no"')
    return [int(v == "yes") for v in values]


def step_answer(text: str) -> tuple[list[int], bool, int]:
    """(step verdicts, whole-proof verdict (True: correct), first incorrect step or -1)."""
    answer = json_answer(text)
    steps = yes_no_list(answer)
    verdict = answer.get("verdict")
    if verdict not in ("correct", "incorrect"):
        raise Unparsed('"verdict" is not "correct" or "incorrect"')
    first = answer.get("first_error")
    if not isinstance(first, int) or isinstance(first, bool) or first < -1:
        raise Unparsed('"first_error" is not -1 or a step number')
    return steps, verdict == "correct", first


def error_list(text: str) -> list[dict[str, str]]:
    """The {location, description} objects of an answer's "errors" list."""
    answer = json_answer(text)
    errors = answer.get("errors")
    if not isinstance(errors, list):
        raise Unparsed('"errors" is not a list')
    out = []
    for error in errors:
        if not isinstance(error, dict) or not isinstance(error.get("location"), str):
            raise Unparsed('an error without a "location" string')
        description = error.get("description", "")
        out.append({"location": error["location"].strip(), "description": str(description)})
    return out
