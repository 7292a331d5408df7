"""Problem categories: a small rule table, first match wins.

A rule names a category (or drops the theorem, with a reason) and holds when every
condition it gives holds: the theorem's name contains one of `name_contains`, its goal
contains one of `goal_keywords` as a token, its group (the first directory under the
development's root) is one of `groups`. A rule with no conditions matches everything.

OFFICIAL_RULES are s2n-bignum-bench's: keywords match as its collect-problems.py matches
them (a keyword preceded by a space or "(", or followed by a space or ")"; "word_*"
matches any token starting with "word_"), on the goal's backquoted text with newlines
made spaces. A JSON file (`--categories FILE`) replaces the table: a list of rules, each
{"category" or "drop", "name_contains", "goal_keywords", "groups"}.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from proofeval.errors import InputError, read_text

FIELDS = ("category", "drop", "name_contains", "goal_keywords", "groups")


@dataclass(frozen=True)
class Rule:
    category: str = ""
    drop: str = ""  # the reason, for a rule that drops the theorem
    name_contains: tuple[str, ...] = ()
    goal_keywords: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def matches(self, name: str, goal: str, group: str) -> bool:
        return (
            (not self.name_contains or any(s in name for s in self.name_contains))
            and (not self.goal_keywords or has_keyword(self.goal_keywords, goal))
            and (not self.groups or group in self.groups)
        )


@dataclass(frozen=True)
class Decision:
    category: str | None  # None: dropped
    reason: str = ""


OFFICIAL_RULES: tuple[Rule, ...] = (
    Rule(drop="not a proof related to functional correctness",
         name_contains=("_EQUIV", "SUBROUTINE_SAFE")),
    Rule(drop="a top-level subroutine that just uses the _CORRECT of the core part",
         name_contains=("SUBROUTINE_CORRECT",)),
    Rule("functional_correctness_arm", name_contains=("_CORRECT",),
         goal_keywords=("ensures",), groups=("arm",)),
    Rule("functional_correctness_x86", name_contains=("_CORRECT",),
         goal_keywords=("ensures",), groups=("x86",)),
    Rule("program_state", goal_keywords=(
        "read", "write", ":>", "nonoverlapping", "nonoverlapping_modulo", "contained",
        "contained_modulo")),
    Rule("bit_vector", goal_keywords=("word_*", "word", "val")),
    Rule("generic"),
)  # fmt: skip


def has_keyword(keywords: tuple[str, ...], goal: str) -> bool:
    text = f" {goal} "
    for kw in keywords:
        if kw.endswith("*"):
            if f" {kw[:-1]}" in text:
                return True
        elif any(t in text for t in (f" {kw}", f"{kw} ", f"({kw}", f"{kw})")):
            return True
    return False


def goal_text(goal: str) -> str:
    """The goal as the rules see it: from its first to its last backquote, one line."""
    goal = goal.strip()
    first, last = goal.find("`"), goal.rfind("`")
    if 0 <= first < last:
        goal = goal[first : last + 1]
    return goal.replace("\n", " ")


def categorize(rules: tuple[Rule, ...], name: str, goal: str, group: str) -> Decision:
    text = goal_text(goal)
    for rule in rules:
        if rule.matches(name, text, group):
            return Decision(None, rule.drop) if rule.drop else Decision(rule.category)
    return Decision("uncategorized")


def load_rules(path: Path) -> tuple[Rule, ...]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a non-empty JSON list of category rules")
    return tuple(_rule(f"{path}: rule {i}", r) for i, r in enumerate(data, start=1))


def _rule(where: str, row: object) -> Rule:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected an object")
    unknown = set(row) - set(FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown fields {sorted(unknown)} (known: {list(FIELDS)})")
    for key in ("category", "drop"):
        if not isinstance(row.get(key, ""), str):
            raise InputError(f"{where}: {key} must be a string")
    if bool(row.get("category")) == bool(row.get("drop")):
        raise InputError(f"{where}: give exactly one of category and drop")
    lists = {}
    for key in ("name_contains", "goal_keywords", "groups"):
        value = row.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InputError(f"{where}: {key} must be a list of non-empty strings")
        lists[key] = tuple(value)
    return Rule(row.get("category", ""), row.get("drop", ""), **lists)


def rules_json(rules: tuple[Rule, ...]) -> list[dict]:
    """The table as a rules file holds it (only the fields a rule sets)."""
    return [{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(r).items() if v}
            for r in rules]  # fmt: skip
