"""Header constructs that reach Coq 8.16.1's known kernel bugs. Headers are the
benchmark's own trusted text (an answer may declare none of these), so they are not
refused: `check` and `build` warn once per benchmark, naming the risk, so that whoever
publishes pass rates knows an answer may exploit what the header set up."""

from __future__ import annotations

import re
from collections.abc import Iterable

from proofeval.provers.coq.sentences import SentenceError, mask

# (what the header does, pattern on the masked header, the risk it opens)
RISKS: list[tuple[str, re.Pattern[str], str]] = [
    (
        "declares or ascribes module types",
        re.compile(r"\b(Module\s+Type|Declare\s+Module)\b|\bModule\s+[\w']+\s*(<:|:(?!=))"),
        "module subtyping has known soundness bugs in Coq 8.16 (rocq #18503 primitives "
        "in module types, #21702, #22387)",
    ),
    (
        "declares or applies functors",
        re.compile(r"\bModule\s+(?!Type\b)[\w']+\s*(\(|:=\s*[\w'.]+\s+[\w'.(])"),
        "functor strengthening drops substitutions in Coq 8.16 (rocq #21051, #21685), and "
        "Print Assumptions misses flags used in functor application (#12155, #16646)",
    ),
    (
        "declares primitives",
        re.compile(r"\b(Primitive|Register)\b"),
        "primitive declarations are trusted by module subtyping and coqchk checks them "
        "little (rocq #18503, #12439, #21736)",
    ),
    (
        "uses unsafe flags",
        re.compile(
            r"\b(Unset\s+(Guard|Positivity|Universe)\s+Checking|bypass_check"
            r"|Definitional\s+UIP|Parameter\s+Inline|Inline)\b"
        ),
        "the kernel's own checks are off or weakened, and Coq 8.16's Print Assumptions "
        "misses some of them (rocq #12155, #16646, #21690)",
    ),
    (
        "uses SProp or cumulative inductives",
        re.compile(r"\b(SProp|Cumulative)\b"),
        "matches from SProp into relevant sorts and variance inference have known "
        "soundness bugs in Coq 8.16 (rocq #21690, #22376)",
    ),
]


def header_risks(header: str) -> list[str]:
    """The risky constructs a header uses, each as 'does X: risk'."""
    try:
        text = mask(header)
    except SentenceError:
        text = header
    return [f"{what}: {risk}" for what, pattern, risk in RISKS if pattern.search(text)]


def benchmark_warnings(problems: Iterable[object]) -> list[str]:
    """One warning per risk found in the Coq headers of a benchmark, with how many
    problems have it. `problems`: Problem objects or builders' dicts."""
    counts: dict[str, int] = {}
    for problem in problems:
        prover = _field(problem, "prover")
        if prover not in ("coq", "rocq"):
            continue
        for risk in header_risks(_field(problem, "header")):
            counts[risk] = counts.get(risk, 0) + 1
    return [
        f"{n} Coq problem{'s have a header that' if n > 1 else ' has a header that'} {risk}; "
        "an answer may exploit it"
        for risk, n in counts.items()
    ]


def _field(problem: object, name: str) -> str:
    if isinstance(problem, dict):
        return str(problem.get(name) or "")
    return str(getattr(problem, name, "") or "")
