"""Lean 4: known to proofeval (its problems load, list and get prompts; answers are
extracted), not checked: no Lean 4 toolchain can be installed here."""
