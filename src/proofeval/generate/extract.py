"""Take the proof out of a model's answer: the last fenced code block, or the whole text."""

from __future__ import annotations

import re

_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)")


def _opening(line: str) -> str | None:
    """The fence that `line` opens, or None."""
    match = _OPEN.fullmatch(line)
    if match is None:
        return None
    fence = match["fence"]
    # As in CommonMark, a backtick fence's info string holds no backtick: "```x```" is inline.
    if fence[0] == "`" and "`" in match["info"]:
        return None
    return fence


def _closes(line: str, fence: str) -> bool:
    bare = line.strip()
    return len(bare) >= len(fence) and bare == fence[0] * len(bare)


def extract_proof(output: str) -> str:
    """The content of the last complete fenced block (``` or ~~~, optional language tag).

    Without a complete block, the content after an unterminated fence (an answer cut off
    mid-block); without any fence, the whole text. The result is stripped.
    """
    last: list[str] | None = None
    fence: str | None = None
    body: list[str] = []
    for line in output.splitlines():
        if fence is None:
            fence = _opening(line)
            body = []
        elif _closes(line, fence):
            last, fence = body, None
        else:
            body.append(line)
    if last is None and fence is not None:
        last = body
    return output.strip() if last is None else "\n".join(last).strip()
