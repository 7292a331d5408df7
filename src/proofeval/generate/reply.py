"""The body of a completions reply, read strictly.

The openai package builds its response objects without validating them, so a reply of the
wrong shape used to surface as a list where a text belongs, or as a traceback. Here the raw
body is read as the API documents it; anything else is a MalformedReply with a short reason
of our own words (nothing of the reply is echoed), never a value of the wrong type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Style = Literal["chat", "completion"]
MAX_TOKENS = 2**53  # a token count above this is no count (and would overflow SQLite)


class MalformedReply(Exception):
    """The reply is not in the shape of the completions API; the message says how."""


@dataclass(frozen=True)
class Reply:
    texts: list[str]  # by choice index
    prompt_tokens: int
    completion_tokens: int


def parse_reply(body: bytes, style: Style) -> Reply:
    doc = json_body(body)
    if not isinstance(doc, dict):
        raise MalformedReply(f"the reply is {reply_kind(doc)}, not a JSON object")
    if "choices" not in doc:
        raise MalformedReply('the reply has no "choices"')
    choices = doc["choices"]
    if not isinstance(choices, list):
        raise MalformedReply(f'"choices" is {reply_kind(choices)}, not a list')
    if not choices:
        raise MalformedReply("no choices returned")
    indexed = sorted((_index(c), _text(c, style)) for c in choices)
    prompt_tokens, completion_tokens = usage_of(doc.get("usage"))
    return Reply([text for _, text in indexed], prompt_tokens, completion_tokens)


def json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except RecursionError:
        raise MalformedReply("the reply is JSON nested too deeply") from None
    except ValueError:  # JSONDecodeError, or bytes that are no Unicode encoding
        raise MalformedReply("the reply is not JSON") from None


def reply_kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "no value")


def _index(choice: Any) -> int:
    if not isinstance(choice, dict):
        raise MalformedReply(f"a choice is {reply_kind(choice)}, not an object")
    index = choice.get("index")
    if index is None:
        return 0
    if not _is_int(index):
        raise MalformedReply(f'a choice\'s "index" is {reply_kind(index)}, not a number')
    return index


def _text(choice: dict, style: Style) -> str:
    if style == "chat":
        if "message" not in choice:
            raise MalformedReply('a choice has no "message"')
        message = choice["message"]
        if not isinstance(message, dict):
            raise MalformedReply(f'a choice\'s "message" is {reply_kind(message)}, not an object')
        return _string(message.get("content"), "content")
    return _string(choice.get("text"), "text")


def _string(value: Any, name: str) -> str:
    """The text of a choice; null (a refusal, a tool call) is the empty text."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReply(f'"{name}" is {reply_kind(value)}, not a string')
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # JSON's \ud800 escapes decode to what no store can hold
        raise MalformedReply(f'"{name}" holds a lone surrogate: not Unicode text') from None
    return value


def usage_of(usage: Any) -> tuple[int, int]:
    """(prompt, completion) tokens; a reply without usage counts none."""
    if usage is None:
        return 0, 0
    if not isinstance(usage, dict):
        raise MalformedReply(f'"usage" is {reply_kind(usage)}, not an object')
    return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")


def _count(usage: dict, name: str) -> int:
    if name not in usage:
        return 0
    value = usage[name]
    if not _is_int(value) or not 0 <= value < MAX_TOKENS:
        raise MalformedReply(f'"usage.{name}" is {reply_kind(value)}, not a token count')
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
