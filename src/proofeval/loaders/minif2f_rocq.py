"""miniF2F in Rocq (LLM4Rocq's miniF2F-rocq): `<root>/{test,valid}/<name>.v`, each file a
header (Require/Open lines, sometimes definitions), then `Theorem <name> ... .` and a
placeholder proof (`Proof. Admitted.` or a bare `Proof.`), sometimes more theorems.

A problem is the theorem named as its file: its statement verbatim, the text before it as
the header; what follows it is dropped. The split (test or valid) is the category. `path`
may be the root or one split's directory.
"""

from __future__ import annotations

from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.model import Problem
from proofeval.provers.coq.policy import DECLARATIONS
from proofeval.provers.coq.sentences import SentenceError, split

SPLITS = ("test", "valid")


def is_minif2f_rocq(path: Path) -> bool:
    """Whether `path` looks like miniF2F-rocq: a root holding test/ or valid/ directories
    of .v files, or one such split directory (named test or valid). Other folders of .v
    files are plain Rocq trees (rocq_tree)."""
    dirs = [path / s for s in SPLITS if (path / s).is_dir()]
    if not dirs and path.name in SPLITS:
        dirs = [path]
    return any(next(d.glob("*.v"), None) is not None for d in dirs)


def load(path: Path, name: str) -> list[Problem]:
    """The problems under `path`, split by split, files in name order."""
    splits = [path / s for s in SPLITS if (path / s).is_dir()] or [path]
    problems = [_problem(f, d.name, name) for d in splits for f in sorted(d.glob("*.v"))]
    if not problems:
        raise InputError(f"{path}: no .v files (expected test/*.v and valid/*.v)")
    return problems


def _problem(file: Path, category: str, benchmark: str) -> Problem:
    text = read_text(file)
    try:
        sentences = split(text)
    except SentenceError as exc:
        raise InputError(f"{file}: {exc}") from None
    for sentence in sentences:
        words = sentence.code.split(None, 2)
        if len(words) >= 2 and words[0] in DECLARATIONS and _name(words[1]) == file.stem:
            return Problem(
                id=file.stem,
                statement=sentence.text + ".",
                prover="coq",
                benchmark=benchmark,
                category=category,
                header=text[: sentence.start].rstrip() + "\n",
            )
    raise InputError(f"{file}: no theorem named {file.stem}")


def _name(word: str) -> str:
    """The identifier a declaration's second word starts with (`p1:` -> `p1`)."""
    end = 0
    while end < len(word) and (word[end].isalnum() or word[end] in "_'"):
        end += 1
    return word[:end]
