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

# How a grading failed, as the report counts it (`reason_kind`). A reason is "STAGE: detail"
# and its detail may hold a model's text (a module's id, a rewrite's errors), so a kind is
# never a slice of it: it is the stage and the first of these phrases found in the detail,
# each from a fixed vocabulary (proofeval's own words: generate/reply.py's for a malformed
# reply, this module's and the methods' for an answer that does not parse).
_VALUE = r"(?:an object|a list|a string|a boolean|null|a number|no value)"
_MALFORMED = (
    rf"the reply is {_VALUE}, not a JSON object",
    r'the reply has no "choices"',
    rf'"choices" is {_VALUE}, not a list',
    r"no choices returned",
    r"the reply is JSON nested too deeply",
    r"the reply is not JSON",
    rf"a choice is {_VALUE}, not an object",
    rf'a choice\'s "(?:index|message)" is {_VALUE}, not (?:a number|an object)',
    r'a choice has no "message"',
    rf'"(?:content|text)" is {_VALUE}, not a string',
    r'"(?:content|text)" holds a lone surrogate: not Unicode text',
    rf'"usage" is {_VALUE}, not an object',
    rf'"usage\.(?:prompt|completion)_tokens" is {_VALUE}, not a token count',
)
_UNPARSED = (
    r"no ```json block",
    r"the ```json block is not JSON",
    r"the ```json block is nested too deeply",
    r"the ```json block is not an object",
    r'"\w+" is not a list of "yes" and "no"',
    r'"verdict" is not "correct" or "incorrect"',
    r'"first_error" is not -1 or a step number',
    r'"errors" is not a list',
    r'an error without a "location" string',
    r'"issues" is not a list of objects',
    r'"faithful" is not true or false',
    r"no faithful rewrite",
)
_KINDS = (  # searched in this order: a malformed reply is what made the answer fail
    re.compile(rf"malformed reply: (?:{'|'.join(_MALFORMED)})"),
    re.compile("malformed reply"),
    re.compile("|".join(_UNPARSED)),
)
_STAGE = re.compile(r"[a-z][a-z ]{0,19}")  # judge, rewrite, verify, calibrate, no text, runner
_WHOLE = re.compile(r"[a-z][a-z' ]{0,59}")  # a reason without a detail, in proofeval's words


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


def reason_kind(reason: str) -> str:
    """The kind of a failed grading's reason: "judge: malformed reply: no choices returned",
    "verify: no ```json block", ... (one per reply fault or answer fault, never a model's
    text); the stage alone when the detail is none of the known faults."""
    stage, colon, detail = reason.partition(": ")
    if not colon:
        return reason if _WHOLE.fullmatch(reason) else "other"
    if not _STAGE.fullmatch(stage):
        return "other"
    for kind in _KINDS:
        if (found := kind.search(detail)) is not None:
            return f"{stage}: {found[0]}"
    return stage


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
