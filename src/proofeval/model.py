"""The data the whole flow passes along: problems, attempts and verdicts."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import Enum


class Verdict(str, Enum):
    OK = "OK"
    FAIL = "FAIL"
    CHEATING = "CHEATING"
    TIMEOUT = "TIMEOUT"
    ERROR = "ERROR"


class Stage(str, Enum):
    EXTRACT = "extract"  # no proof in the answer: nothing reached a prover
    PRECHECK = "precheck"
    CHECK = "check"


@dataclass(frozen=True)
class Problem:
    """One statement to prove, with the context it is stated in.

    `header` is the context (for HOL Light: OCaml setup text loaded before the goal);
    `directory` is where relative loads in the header resolve ("" for none);
    `timeout` is a per-problem limit in seconds when the benchmark gives one;
    `reference` is the known proof, never shown to a model;
    `coq_toolchain` names the Coq toolchain a Coq problem is stated for ("": the host's).
    """

    id: str
    statement: str
    prover: str = "hol-light"
    benchmark: str = ""
    category: str = "uncategorized"
    header: str = ""
    directory: str = ""
    timeout: float | None = None
    reference: str | None = None
    coq_toolchain: str = ""


@dataclass(frozen=True)
class Attempt:
    """One answer to one problem; `index` counts that problem's attempts from 0."""

    problem_id: str
    index: int
    output: str
    proof: str


@dataclass(frozen=True)
class Outcome:
    """The verdict on one attempt, with the stage that decided it."""

    verdict: Verdict
    stage: Stage
    seconds: float
    message: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", one_line(self.message))


MESSAGE_LIMIT = 300
# Unicode categories shown escaped: controls (NUL, ESC, DEL, C1), format characters (bidi
# overrides, which reorder a displayed line; zero-width ones) and lone surrogates.
UNPRINTABLE = ("Cc", "Cf", "Cs")


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` as a verdict message: one line of at most `limit` characters, safe in a CSV
    cell, HTML, a terminal and SQLite. Runs of white space (CR, LF, tabs...) become one
    space; every other control, format or surrogate character becomes a visible escape
    (NUL as \\x00, ESC as \\x1b, a bidi override as \\u202e), never cut in two."""
    shown: list[str] = []
    size = 0
    for char in " ".join(text.split()):
        if unicodedata.category(char) in UNPRINTABLE:
            char = char.encode("unicode_escape").decode("ascii")
        size += len(char)
        if size > limit:
            break
        shown.append(char)
    return "".join(shown)


@dataclass(frozen=True)
class Generation:
    """One model completion for one problem; its `sample` is the attempt's index."""

    problem_id: str
    sample: int
    prompt: str
    output: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
