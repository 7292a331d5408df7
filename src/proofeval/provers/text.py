"""Answer text with its comments and strings blanked out, for the provers whose answers
restate a theorem (Coq, Lean 4): positions found in the masked text are the text's own."""

from __future__ import annotations


def blanked(code: str, line_comment: str | None, block: tuple[str, str]) -> str:
    """`code` with its comments and string literals blanked out, indices unchanged."""
    out = list(code)
    opening, closing = block
    i = 0
    while i < len(code):
        if code.startswith(opening, i):
            end = _block_end(code, i, opening, closing)
        elif line_comment and code.startswith(line_comment, i):
            newline = code.find("\n", i)
            end = len(code) if newline < 0 else newline
        elif code[i] == '"':
            end = _string_end(code, i)
        else:
            i += 1
            continue
        out[i:end] = [c if c == "\n" else " " for c in code[i:end]]
        i = end
    return "".join(out)


def _block_end(code: str, i: int, opening: str, closing: str) -> int:
    """The index after the (nested) block comment that starts at `i`."""
    depth = 0
    while i < len(code):
        if code.startswith(opening, i):
            depth, i = depth + 1, i + len(opening)
        elif code.startswith(closing, i):
            depth, i = depth - 1, i + len(closing)
            if depth == 0:
                return i
        else:
            i += 1
    return i


def _string_end(code: str, i: int) -> int:
    i += 1
    while i < len(code) and code[i] != '"':
        i += 2 if code[i] == "\\" else 1
    return min(i + 1, len(code))
