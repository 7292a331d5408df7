"""Split Coq text into sentences the way Coq's lexer does.

A sentence ends at a `.` (or `...`) followed by white space or the end of the text; a `.`
inside an identifier path (`Nat.add`), `..` in notations, nested comments `(* ... *)`
(with the string literals inside them) and string literals (`""` is a quote) do not end
one. At a sentence's start, bullets (`-`, `+`, `*`, repeated) and braces (`{`, `}`, also
after a goal selector such as `2:`) are sentences of their own, as Coq's proof mode
reads them. Text that Coq could not lex the same way is refused with SentenceError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BLANKS = " \t\r\n"
_BULLET = re.compile(r"(-+|\++|\*+)(?!\))")
_SELECTOR_BRACE = re.compile(r"(?:\d+(?:\s*-\s*\d+)?|\[\s*[A-Za-z_][\w']*\s*\])\s*:\s*\{")


class SentenceError(ValueError):
    """The text is not a sequence of complete Coq sentences."""


@dataclass(frozen=True)
class Sentence:
    """One sentence: `text` without its final period (bullets and braces have none),
    `code` the same text with comments blanked and string contents masked (so a
    position in one is the same position in the other), for inspection."""

    text: str
    code: str
    kind: str  # "text" | "bullet" | "brace"
    ellipsis: bool = False  # ended with `...` rather than `.`
    start: int = 0  # where it starts in the source
    end: int = 0  # where it ends in the source, after its period


def split(source: str) -> list[Sentence]:
    """The sentences of `source`, in order; SentenceError if any is unterminated."""
    masked = mask(source)
    sentences: list[Sentence] = []
    i = _skip_blank(masked, 0)
    while i < len(source):
        end, kind, stop, ellipsis = _next_sentence(masked, i)
        while stop > i and masked[stop - 1] in BLANKS:  # a comment before the period
            stop -= 1
        sentences.append(Sentence(source[i:stop], masked[i:stop], kind, ellipsis, i, end))
        i = _skip_blank(masked, end)
    return sentences


def _skip_blank(masked: str, i: int) -> int:
    while i < len(masked) and masked[i] in BLANKS:
        i += 1
    return i


def _next_sentence(masked: str, i: int) -> tuple[int, str, int, bool]:
    """(end, kind, stop, ellipsis): the sentence starting at `i` ends before `end`; its
    text is masked[i:stop] (without the final period)."""
    bullet = _BULLET.match(masked, i)
    if bullet is not None:
        return bullet.end(), "bullet", bullet.end(), False
    if masked[i] in "{}":
        return i + 1, "brace", i + 1, False
    brace = _SELECTOR_BRACE.match(masked, i)
    if brace is not None:
        return brace.end(), "brace", brace.end(), False
    return _period(masked, i)


def _period(masked: str, i: int) -> tuple[int, str, int, bool]:
    j = i
    while j < len(masked):
        if masked[j] != ".":
            j += 1
            continue
        after = j
        while after < len(masked) and masked[after] == ".":
            after += 1
        dots = after - j
        ends = after == len(masked) or masked[after] in BLANKS
        if ends and dots in (1, 3):
            return after, "text", j, dots == 3
        if ends and dots > 3:
            raise SentenceError(f"unexpected {'.' * dots} at character {j}")
        j = after
    raise SentenceError("the last sentence does not end with a period")


def mask(source: str) -> str:
    """`source` with comments blanked and string literals' contents replaced by `_`
    (quotes kept), indices unchanged; SentenceError for an unterminated one."""
    out = list(source)
    i = 0
    while i < len(source):
        if source.startswith("(*", i):
            end = _comment_end(source, i)
            out[i:end] = [c if c in BLANKS else " " for c in source[i:end]]
        elif source[i] == '"':
            end = _string_end(source, i)
            out[i + 1 : end - 1] = ["_"] * (end - i - 2)
        else:
            i += 1
            continue
        i = end
    return "".join(out)


def _comment_end(source: str, i: int) -> int:
    """The index after the comment opened at `i`: comments nest, and a string inside
    one is read as a string (Coq's lexer does so: `(* "*)" *)` is one comment)."""
    depth = 0
    while i < len(source):
        if source.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif source.startswith("*)", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        elif source[i] == '"':
            i = _string_end(source, i)
        else:
            i += 1
    raise SentenceError("unterminated comment")


def _string_end(source: str, i: int) -> int:
    """The index after the string literal opened at `i` (`""` inside is one quote)."""
    i += 1
    while i < len(source):
        if source[i] == '"':
            if source.startswith('""', i):
                i += 2
                continue
            return i + 1
        i += 1
    raise SentenceError("unterminated string")
