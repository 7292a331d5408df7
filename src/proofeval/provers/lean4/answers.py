"""A Lean 4 answer's proof: what follows the theorem's `:=`, as NeMo-Skills keeps it."""

from __future__ import annotations

import re

from proofeval.provers.text import blanked

_LEAN_DECL = re.compile(
    r"^[ \t]*(?:@\[[^\]]*\][ \t]*)?(?:(?:private|protected|noncomputable|nonrec)[ \t]+)*"
    r"(?:theorem|lemma|example)\b",
    re.MULTILINE,
)
_OPENERS, _CLOSERS = "([{⟨⦃", ")]}⟩⦄"


def lean_proof(code: str) -> str:
    """The proof of the first theorem/lemma/example in `code`: what follows its `:=`,
    without a leading `by`, indented as NeMo-Skills' proofs are (its statements end in
    `:= by`). Text with no such declaration loses only a leading `by`.
    """
    masked = blanked(code, "--", ("/-", "-/"))
    decl = _LEAN_DECL.search(masked)
    if decl is None:
        return _drop_by(code)
    depth = 0
    for i in range(decl.end(), len(masked) - 1):
        if masked[i] in _OPENERS:
            depth += 1
        elif masked[i] in _CLOSERS:
            depth = max(0, depth - 1)
        elif depth == 0 and masked.startswith(":=", i):  # binders may hold `:=`
            return _drop_by(code[i + 2 :].lstrip(" \t"))
    return code.strip()


_BY = re.compile(r"[ \t]*by(?![\w'])[ \t]*")


def _drop_by(text: str) -> str:
    """`text` without a leading `by`: tactics on its line get the next lines' indentation,
    so that the proof reads as one block after the benchmark's `:= by`."""
    lines = text.rstrip().split("\n")
    by = _BY.match(lines[0])
    if by is not None:
        rest = lines[0][by.end() :]
        indent = next((_indent(line) for line in lines[1:] if line.strip()), "  ")
        lines[0] = indent + rest if rest.strip() else ""
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
