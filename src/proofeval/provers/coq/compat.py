"""The compatibility layer: renames between Rocq 9 (what NTP4VC and other new benchmarks
are written for) and an installed Coq 8.x, declared here in one table.

Each rule is a regular expression over a library file's or a header's text and its
replacement; `apply` names the rules that changed something, so that a run can say which
were used. A theorem statement never goes through this module: the checker passes it
around the layer, and a statement is what a model is judged against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Rocq 9 has these in Stdlib.Reals; Coq 8.20 does not (NTP4VC's Base.v uses them in Ztrunc).
# `up x` is the integer just above x, so `up x - 1` is its floor, integer or not.
_ZFLOOR = (
    "Definition Zfloor (x : R) : Z := (up x - 1)%Z.\n"
    "Definition Zceil (x : R) : Z := (- Zfloor (Ropp x))%Z.\n"
)


@dataclass(frozen=True)
class Rule:
    name: str  # as runs report it
    pattern: re.Pattern[str]
    replacement: str
    unless: re.Pattern[str] | None = None  # not applied to a text this matches


RULES: tuple[Rule, ...] = (
    Rule("From Stdlib -> From Coq", re.compile(r"\bFrom(\s+)Stdlib\b"), r"From\1Coq"),
    Rule("From Corelib -> From Coq", re.compile(r"\bFrom(\s+)Corelib\b"), r"From\1Coq"),
    Rule(
        "stdpp list_relations -> stdpp list",
        re.compile(r"\b(From\s+stdpp\s+Require\s+(?:Import\s+|Export\s+)?)list_relations\s*\."),
        r"\1list.",
    ),
    Rule(
        "Zfloor/Zceil defined",
        re.compile(r"^(?=Definition\s+Ztrunc\b.*\bZfloor\b)", re.MULTILINE),
        _ZFLOOR,
        unless=re.compile(r"\b(Definition|Fixpoint|Notation)\s+Zfloor\b"),
    ),
)


def needed(version: str) -> bool:
    """Whether a Coq of `version` ("8.20.1") needs the layer: every 8.x does."""
    return version.startswith("8.")


def apply(text: str, version: str) -> tuple[str, list[str]]:
    """`text` (a library file or a header, never a statement) as the Coq of `version`
    reads it, and the names of the rules that changed it."""
    if not needed(version):
        return text, []
    applied = []
    for rule in RULES:
        if rule.unless is not None and rule.unless.search(text):
            continue
        text, count = rule.pattern.subn(rule.replacement, text)
        if count:
            applied.append(rule.name)
    return text, applied
