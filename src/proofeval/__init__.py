"""proofeval: check machine-generated proofs in real provers."""

__version__ = "0.1.0"
