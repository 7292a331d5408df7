"""Search results for agents, structured: each theorem's name and statement as the prover
prints them (HOL Light's `search`, `name: |- term`; Coq's `Search`, `name: type`), at
most so many, each bounded in size, and whether more were found."""

from __future__ import annotations

from dataclasses import dataclass

ENTRY_LIMIT = 4000  # characters of one statement
MAX_RESULTS = 200


@dataclass(frozen=True)
class Theorem:
    name: str
    statement: str

    def as_json(self) -> dict:
        return {"name": self.name, "statement": self.statement}


@dataclass(frozen=True)
class Found:
    """At most the limit's theorems; `more`: the prover found others past it."""

    theorems: tuple[Theorem, ...]
    more: bool

    def as_json(self) -> dict:
        return {"theorems": [t.as_json() for t in self.theorems], "more": self.more}


def theorem(entry: str) -> Theorem:
    """One entry of the prover's results. Both provers print the name first, then a colon
    (a name holds none: Coq's qualified identifiers, HOL Light's theorem names)."""
    name, sep, statement = entry.partition(":")
    if not sep:
        return Theorem("", _cut(entry.strip()))
    return Theorem(name.strip(), _cut(statement.strip()))


def found(entries: list[str], limit: int) -> Found:
    """`entries` (the prover asked for one more than `limit`) as a Found."""
    return Found(tuple(theorem(e) for e in entries[:limit]), len(entries) > limit)


def _cut(text: str) -> str:
    return text if len(text) <= ENTRY_LIMIT else text[: ENTRY_LIMIT - 3] + "..."
