"""Isabelle/HOL: known to proofeval (its problems load, list and get prompts), not
checked: no Isabelle toolchain can be installed here."""
