"""proofeval: check machine-generated proofs in real provers."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Checker"]


def __getattr__(name: str):
    if name == "Checker":  # imported on first use: the command line does not need it
        from proofeval.scale.api import Checker

        return Checker
    raise AttributeError(f"module 'proofeval' has no attribute {name!r}")
