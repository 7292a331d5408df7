"""Take the proof out of a model's answer, with NeMo-Skills semantics.

extract() keeps, in order: the text after the last final-answer marker (when one is given
and present), the first or last fenced code block (else the whole text), and for Lean and
Coq only the proof, without any theorem header the model wrote: the benchmark's own
statement is always the one checked. extract_proof() is the plain last-block rule.
"""

from __future__ import annotations

import re
from typing import Literal

Block = Literal["first", "last"]

LEAN = {"lean", "lean4"}
COQ = {"coq", "rocq"}

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
    if prover in LEAN:
        return lean_proof(proof)
    if prover in COQ:
        named = _COQ_NAME.match(statement)
        return coq_proof(proof, named[1] if named else None)
    return proof


# --- Lean and Coq -----------------------------------------------------------------------


def _mask(code: str, line_comment: str | None, block: tuple[str, str]) -> str:
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
    masked = _mask(code, "--", ("/-", "-/"))
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


_COQ_DECL = re.compile(
    r"(?<![\w'.])(?:Theorem|Lemma|Example|Fact|Remark|Corollary|Proposition|Property)\s"
)
_COQ_PERIOD = re.compile(r"(?<!\.)\.(?=\s|$)")
_COQ_NAME = re.compile(
    r"\s*(?:Theorem|Lemma|Example|Fact|Remark|Corollary|Proposition|Property)\s+([\w']+)"
)
_COQ_PROOF = re.compile(r"\s*Proof\b[^.]*\.(?=\s|$)")
_COQ_END = re.compile(r"(?<![\w'.])(Qed|Defined|Admitted|Abort)\s*\.(?=\s|$)")


def coq_proof(code: str, name: str | None = None) -> str:
    """The proof script of the Theorem/Lemma/... named `name` in `code` (else the first):
    the sentences between its statement (and `Proof.`) and the closing `Qed.` or
    `Defined.`, after the auxiliary lemmas stated before it, which are kept whole. A
    closing `Admitted.` or `Abort.` is kept, for the checker to judge.
    """
    masked = _mask(code, None, ("(*", "*)"))
    decls = list(_COQ_DECL.finditer(masked))
    decl = next((d for d in decls if _names(masked, d, name)), decls[0] if decls else None)
    lemmas = code[decls[0].start() : decl.start()].strip() if decl is not None else ""
    proof = _proof_after(code, masked, decl)
    return f"{lemmas}\n{proof}" if lemmas else proof


def _names(masked: str, decl: re.Match[str], name: str | None) -> bool:
    pattern = rf"\s*{re.escape(name or '')}(?![\w'])"
    return name is not None and re.match(pattern, masked[decl.end() :]) is not None


def _proof_after(code: str, masked: str, decl: re.Match[str] | None) -> str:
    start = 0
    if decl is not None:
        period = _COQ_PERIOD.search(masked, decl.end())
        if period is None:
            return code.strip()
        start = period.end()
    proof = _COQ_PROOF.match(masked, start)
    if proof is not None:
        start = proof.end()
    end = _COQ_END.search(masked, start)
    if end is None:
        return code[start:].strip()
    stop = end.start() if end[1] in ("Qed", "Defined") else end.end()
    return code[start:stop].strip()
