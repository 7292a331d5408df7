"""Take the proof out of a model's answer, with NeMo-Skills semantics.

extract() keeps, in order: the text after the last final-answer marker (when one is given
and present), the first or last fenced code block (else the whole text), and then what the
prover's backend keeps of it (Lean and Coq: only the proof, without any theorem header
the model wrote: the benchmark's own statement is always the one checked).
extract_proof() is the plain last-block rule.
"""

from __future__ import annotations

import re
from typing import Literal

from proofeval.provers import registry

Block = Literal["first", "last"]

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


def fenced_block(output: str, block: Block = "last") -> str:
    """The content of the first or last complete fenced block (``` or ~~~, optional tag).

    Without a complete block, the content after an unterminated fence (an answer cut off
    mid-block); without any fence, the whole text. The result is stripped.
    """
    chosen: list[str] | None = None
    fence: str | None = None
    body: list[str] = []
    for line in output.splitlines():
        if fence is None:
            fence = _opening(line)
            body = []
        elif _closes(line, fence):
            fence = None
            if chosen is None or block == "last":
                chosen = body
        else:
            body.append(line)
    if chosen is None and fence is not None:
        chosen = body
    return output.strip() if chosen is None else "\n".join(chosen).strip()


def has_fence(output: str) -> bool:
    """Whether `output` opens a fenced block anywhere (complete or cut off)."""
    return any(_opening(line) is not None for line in output.splitlines())


def extract_proof(output: str) -> str:
    """The content of the last complete fenced block; see fenced_block()."""
    return fenced_block(output, "last")


def after_marker(output: str, marker: str | None) -> str:
    """The text after the last occurrence of `marker`; all of it if the marker is absent.

    NeMo-Skills splits at the first occurrence; the last is what a model that mentions the
    marker while reasoning, then gives its final answer, means.
    """
    if not marker or marker not in output:
        return output
    return output.rsplit(marker, 1)[1]


def extract(
    output: str,
    prover: str = "hol-light",
    block: Block = "last",
    marker: str | None = None,
    statement: str = "",
) -> str:
    """The proof to check in a model's raw output; see the module docstring. `statement`:
    the benchmark's, whose theorem's proof is the one kept (Coq)."""
    proof = fenced_block(after_marker(output, marker), block)
    known = registry.find(prover)
    return proof if known is None else known.answer(proof, statement)
