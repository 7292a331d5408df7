"""What inspect_ai registers from proofeval (the `inspect_ai` entry point): the tasks,
the scorer, the pass@k reducer and the agent solver."""

from proofeval.integrations.inspect_scorer import pass_at, proof_checker
from proofeval.integrations.inspect_tasks import (
    benchmark,
    demo,
    jsonl,
    minif2f_hol_light,
    minif2f_rocq,
    ntp4vc,
    putnam_rocq,
    s2n_bignum,
)
from proofeval.integrations.inspect_tools import prove_with_tools

__all__ = [
    "benchmark",
    "demo",
    "jsonl",
    "minif2f_hol_light",
    "minif2f_rocq",
    "ntp4vc",
    "pass_at",
    "proof_checker",
    "prove_with_tools",
    "putnam_rocq",
    "s2n_bignum",
]
