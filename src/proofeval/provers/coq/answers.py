"""A Coq answer's proof: the script of the benchmark's theorem in what a model wrote, the
auxiliary lemmas before it kept whole; a restated statement is dropped (the benchmark's
own is the one checked)."""

from __future__ import annotations

import re

from proofeval.provers.text import blanked

_COQ_DECL = re.compile(
    r"(?<![\w'.])(?:Theorem|Lemma|Example|Fact|Remark|Corollary|Proposition|Property)\s"
)
_COQ_PERIOD = re.compile(r"(?<!\.)\.(?=\s|$)")
_COQ_NAME = re.compile(
    r"\s*(?:Theorem|Lemma|Example|Fact|Remark|Corollary|Proposition|Property)\s+([\w']+)"
)
_COQ_PROOF = re.compile(r"\s*Proof\b[^.]*\.(?=\s|$)")
_COQ_END = re.compile(r"(?<![\w'.])(Qed|Defined|Admitted|Abort)\s*\.(?=\s|$)")


def answer(proof: str, statement: str) -> str:
    """The proof to check in a model's fenced answer to `statement`: the script of the
    theorem the statement names (see coq_proof)."""
    named = _COQ_NAME.match(statement)
    return coq_proof(proof, named[1] if named else None)


def coq_proof(code: str, name: str | None = None) -> str:
    """The proof script of the Theorem/Lemma/... named `name` in `code` (else the first):
    the sentences between its statement (and `Proof.`) and the closing `Qed.` or
    `Defined.`, after the auxiliary lemmas stated before it, which are kept whole. A
    closing `Admitted.` or `Abort.` is kept, for the checker to judge.
    """
    masked = blanked(code, None, ("(*", "*)"))
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
