"""Lean 4 as proofeval sees it (see provers/backend.py): no checker."""

from __future__ import annotations

from proofeval.provers.backend import Backend
from proofeval.provers.lean4.answers import lean_proof


def _answer(proof: str, _statement: str) -> str:
    return lean_proof(proof)


BACKEND = Backend(
    name="lean4",
    title="Lean 4",
    fence="lean4",
    aliases=("lean",),
    unchecked="no Lean 4 toolchain is installed with proofeval",
    answer=_answer,
)
