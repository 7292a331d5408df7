"""Isabelle/HOL as proofeval sees it (see provers/backend.py): no checker."""

from __future__ import annotations

from proofeval.provers.backend import Backend

BACKEND = Backend(
    name="isabelle",
    title="Isabelle/HOL",
    fence="isabelle",
    unchecked="no Isabelle toolchain is installed with proofeval",
)
