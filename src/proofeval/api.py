"""The Python API's public path (its code lives in proofeval/scale/)."""

from proofeval.scale.api import Checker, Stats, problem

__all__ = ["Checker", "Stats", "problem"]
