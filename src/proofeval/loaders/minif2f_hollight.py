"""miniF2F in HOL Light as openai/miniF2F publishes it (`hollight/`): `<root>/{test,valid}/
<name>.ml`, each file one phrase `let <name> = `<term>`;;` (two test files repeat the
`let <name> =`: read as one). Names have hyphens, so the files are not OCaml to `#use`:
the term is the problem.

A problem is its file's term in backquotes, as HOL Light statements are in proofeval. The
files state no libraries (miniF2F's HOL Light section is "WIP"), so the header says what
the term needs beyond HOL Light's core (hol.ml), as `needs` lines, from the constants it
names: see `needs`. The split (test or valid) is the category, as for miniF2F-rocq. `path`
may be the root or one split's directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.model import Problem

SPLITS = ("test", "valid")
PHRASE = re.compile(r"\A\s*(?:let\s+([A-Za-z0-9_'-]+)\s*=\s*)+`([^`]*)`\s*;;\s*\Z")
LET = re.compile(r"let\s+([A-Za-z0-9_'-]+)\s*=")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")

FLOOR = "Library/floor.ml"
TRANSC = "Library/transc.ml"
COMPLEX = "Complex/complexnumbers.ml"
MULTIVARIATE = "Multivariate/complexes.ml"
MULTIVARIATE_TRANSC = "Multivariate/transcendentals.ml"
# The constants (and the type `complex`) each library defines that miniF2F's terms use
# or could; the core already has sqrt, prime, gcd, lcm, divides, `mod`, nsum, sum,
# product, nproduct, num_of_int, real_of_int and integer.
DEFINES = {
    FLOOR: {"floor", "frac", "rational"},
    TRANSC: {"exp", "ln", "sin", "cos", "tan", "atn", "asn", "acs", "pi", "root"},
    COMPLEX: {"complex", "Cx", "ii", "Re", "Im", "cnj"},
    MULTIVARIATE: {"vsum", "vector", "dot", "basis"},
}


def is_minif2f_hollight(path: Path) -> bool:
    """Whether `path` looks like miniF2F's HOL Light: a root holding test/ or valid/
    directories of .ml files whose first file is one `let name = `term`;;` phrase, or
    one such split directory (named test or valid)."""
    for directory in _splits(path):
        first = min(directory.glob("*.ml"), default=None)
        if first is not None and first.is_file():
            return PHRASE.match(read_text(first)) is not None
    return False


def load(path: Path, name: str) -> list[Problem]:
    """The problems under `path`, split by split, files in name order."""
    problems = [_problem(f, d.name, name) for d in _splits(path) for f in sorted(d.glob("*.ml"))]
    if not problems:
        raise InputError(f"{path}: no .ml files (expected test/*.ml and valid/*.ml)")
    return problems


def _splits(path: Path) -> list[Path]:
    dirs = [path / s for s in SPLITS if (path / s).is_dir()]
    if not dirs and path.name in SPLITS and path.is_dir():
        dirs = [path]
    return dirs


def _problem(file: Path, category: str, benchmark: str) -> Problem:
    text = read_text(file)
    match = PHRASE.match(text)
    if match is None:
        raise InputError(f"{file}: not one phrase `let {file.stem} = `<term>`;;`")
    names = set(LET.findall(text[: match.start(2)]))
    if names != {file.stem}:
        raise InputError(f"{file}: the term is named {', '.join(sorted(names))}, not {file.stem}")
    term = match.group(2).strip()
    return Problem(
        id=file.stem,
        statement=f"`{term}`",
        prover="hol-light",
        benchmark=benchmark,
        category=category,
        header="".join(f'needs "{library}";;\n' for library in needs(term)),
    )


def needs(term: str) -> list[str]:
    """The HOL Light libraries `term` needs beyond the core, in load order.

    Complex numbers are Complex/complexnumbers.ml's (built on Library/transc.ml, listed
    first so that contexts share its load), unless the term needs vectors (`vsum` over
    complex numbers): then all of it is Multivariate's, whose `complex` is `real^2` and
    which defines floor and, in transcendentals.ml, the real and complex exp, ln, sin...
    (the two developments define the same names and cannot be loaded together)."""
    names = set(IDENTIFIER.findall(term))
    uses = {library for library, defined in DEFINES.items() if names & defined}
    if MULTIVARIATE in uses:
        return [MULTIVARIATE_TRANSC if TRANSC in uses else MULTIVARIATE]
    if COMPLEX in uses:
        uses.add(TRANSC)
    return [library for library in (TRANSC, COMPLEX, FLOOR) if library in uses]
