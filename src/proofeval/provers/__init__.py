"""Prover backends: one package per prover, plus the shared sandbox."""
