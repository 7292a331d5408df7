"""A plain tree of Rocq `.v` files as published (PutnamBench's coq/src): no manifest, one
statement per file, every `.v` under the root a case (or under `<root>/src` when the root
holds none of its own and has a src/ directory).

A case's problem is the theorem named as its file; in a file where none is, its one
theorem whose proof is `Admitted`; a file with neither (or that does not split into
sentences) is skipped, with its reason, and the rest still load. The statement is kept
verbatim, the text before it is the header, what follows is dropped. The id is the path
under the root without `.v`; the category comes from `categories` (see `category_of`).
The problem's `directory` is the root when it has a `_CoqProject` (its libraries), else
empty, so that files with one header share a warm coqtop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.model import Problem
from proofeval.provers.coq.policy import DECLARATIONS
from proofeval.provers.coq.sentences import Sentence, SentenceError, split
from proofeval.provers.coq.session import PROJECT_FILE

CATEGORY_SCHEMES = ("directory", "year", "library")
STDLIB_ROOTS = frozenset({"Coq", "Stdlib"})


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def tree_root(path: Path) -> Path | None:
    """The root of the tree at `path`: itself when it holds `.v` files of its own (or
    below it, without a src/), its src/ otherwise; None without any `.v` file."""
    if not path.is_dir():
        return None
    if next(path.glob("*.v"), None) is None and (path / "src").is_dir():
        path = path / "src"
    return path if next(path.rglob("*.v"), None) is not None else None


def load(
    root: Path, name: str, categories: str = "directory"
) -> tuple[list[Problem], list[Skipped]]:
    """The cases under `root`, by path; the files skipped, with why."""
    root = root.resolve()
    directory = str(root) if (root / PROJECT_FILE).is_file() else ""
    problems, skipped = [], []
    for file in sorted(root.rglob("*.v")):
        pid = file.relative_to(root).with_suffix("").as_posix()
        try:
            header, statement = read_case(file)
        except InputError as exc:
            skipped.append(Skipped(pid, str(exc)))
            continue
        category = category_of(pid, header, categories)
        problems.append(Problem(pid, statement, "coq", name, category, header, directory=directory))
    if not problems:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:3])
        raise InputError(f"{root}: no case loads ({reasons})")
    return problems, skipped


def read_case(file: Path) -> tuple[str, str]:
    """(header, statement) of the case in `file`; InputError saying why there is none."""
    text = read_text(file)
    try:
        sentences = split(text)
    except SentenceError as exc:
        raise InputError(f"does not split into sentences: {exc}") from None
    theorem = case_theorem(sentences, file.stem)
    return text[: theorem.start].rstrip() + "\n", theorem.text + "."


def case_theorem(sentences: list[Sentence], stem: str) -> Sentence:
    """The declaration named `stem`; else the one whose proof is `Admitted`."""
    admitted: list[Sentence] = []
    last: Sentence | None = None
    for sentence in sentences:
        words = sentence.code.split(None, 2)
        if len(words) >= 2 and words[0] in DECLARATIONS:
            if declared_name(words[1]) == stem:
                return sentence
            last = sentence
        elif words == ["Admitted"] and last is not None:
            admitted.append(last)
            last = None
    if len(admitted) == 1:
        return admitted[0]
    names = [declared_name(s.code.split(None, 2)[1]) for s in admitted]
    raise InputError(
        f"no theorem named {stem}, and {len(admitted)} with `Admitted` "
        f"({', '.join(names) or 'none'}): which one is the case is not clear"
    )


def declared_name(word: str) -> str:
    """The identifier a declaration's second word starts with (`p1:` -> `p1`)."""
    end = 0
    while end < len(word) and (word[end].isalnum() or word[end] in "_'"):
        end += 1
    return word[:end]


def category_of(pid: str, header: str, scheme: str) -> str:
    """A case's category by `scheme`: `directory` (its first directory under the root),
    `year` (the first four-digit number in its id: PutnamBench's competition year),
    `library` (the first library outside the standard one its header imports, else
    `stdlib`: PutnamBench's mathcomp, coquelicot, geocoq, coqtail), or a regular
    expression searched in the id (its first group, or the whole match). `uncategorized`
    when the scheme finds nothing."""
    if scheme == "directory":
        parts = pid.split("/")
        return parts[0] if len(parts) > 1 else "uncategorized"
    if scheme == "year":
        found = re.search(r"(?<!\d)(\d{4})(?!\d)", pid)
        return found.group(1) if found else "uncategorized"
    if scheme == "library":
        return imported_library(header)
    found = re.search(scheme, pid)
    if found is None:
        return "uncategorized"
    return found.group(1) if found.groups() and found.group(1) else found.group(0)


def check_scheme(scheme: str) -> None:
    """InputError unless `scheme` is a named scheme or a valid regular expression."""
    if scheme in CATEGORY_SCHEMES:
        return
    try:
        re.compile(scheme)
    except re.error as exc:
        raise InputError(
            f"--categories {scheme!r}: neither {', '.join(CATEGORY_SCHEMES)} nor a regular "
            f"expression ({exc})"
        ) from None


_REQUIRE = re.compile(
    r"(?:From\s+([\w.]+)\s+)?Require\s+(?:Import\s+|Export\s+)?([\w.\s]+?)\.(?:\s|$)"
)


def imported_library(header: str) -> str:
    """The first library outside Coq's standard one that `header` requires, lowercase:
    the X of `From X Require`, or the first part of a dotted `Require Import X.Y`
    (an undotted name, `Require Import Reals`, is the standard library's)."""
    for match in _REQUIRE.finditer(header):
        roots = [match.group(1)] if match.group(1) else match.group(2).split()
        for name in roots:
            root = name.split(".")[0]
            if (match.group(1) or "." in name) and root not in STDLIB_ROOTS:
                return root.lower()
    return "stdlib"
