"""A dune project's Coq theories as load paths (NTP4VC declares its libraries this way).

Every `dune` file under the tree's root with a `(coq.theory (name N) (theories ...))`
stanza makes its directory the logical path N (`-Q DIR N`). A directory's load paths are
the theories its own stanza needs, and theirs, found by name in the tree; names not in
the tree (Stdlib, stdpp, stdpp.bitvector) are installed libraries Coq finds itself. The
tree's root is the nearest directory above with a `dune-workspace`, else the topmost
with a `dune-project`. Symbolic links to directories are not followed.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

DUNE = "dune"
_TOKEN = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()";]+|;[^\n]*')


@dataclass(frozen=True)
class Theory:
    name: str
    directory: str  # relative to the tree's root
    needs: tuple[str, ...]


def parse_sexps(text: str) -> list[object]:
    """The s-expressions of a dune file: lists of atoms (strings) and lists."""
    stack: list[list[object]] = [[]]
    for token in _TOKEN.findall(text):
        if token.startswith(";"):
            continue
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) > 1:
                done = stack.pop()
                stack[-1].append(done)
        else:
            stack[-1].append(token.strip('"'))
    return stack[0]


def theory_of(text: str, directory: str) -> Theory | None:
    """The coq.theory a dune file declares, or None."""
    for sexp in parse_sexps(text):
        if isinstance(sexp, list) and sexp and sexp[0] == "coq.theory":
            fields = {f[0]: f[1:] for f in sexp[1:] if isinstance(f, list) and f}
            name = fields.get("name", [])
            if name and isinstance(name[0], str):
                needs = tuple(n for n in fields.get("theories", []) if isinstance(n, str))
                return Theory(name[0], directory, needs)
    return None


def tree_root(directory: Path) -> Path | None:
    """The dune tree's root above `directory` (see the module's text), or None."""
    projects = []
    for parent in [directory, *directory.parents]:
        if (parent / "dune-workspace").is_file():
            return parent
        if (parent / "dune-project").is_file():
            projects.append(parent)
    return projects[-1] if projects else None


@functools.cache
def theories(root: Path) -> dict[str, Theory]:
    """Every theory under `root`, by name (the first one found, in sorted order)."""
    found: dict[str, Theory] = {}
    for here, dirs, files in os.walk(root):
        dirs.sort()
        dirs[:] = [d for d in dirs if not d.startswith((".", "_build"))]
        if DUNE in files:
            relative = Path(here).relative_to(root).as_posix()
            text = Path(here, DUNE).read_text(errors="replace")
            theory = theory_of(text, relative)
            if theory is not None:
                found.setdefault(theory.name, theory)
    return found


def load_paths(directory: Path) -> tuple[Path, list[tuple[str, str]]] | None:
    """(the tree's root, [(directory under it, logical name)]) for the theories that
    `directory`'s dune stanza needs, dependencies first; None when it has no stanza."""
    directory = directory.resolve()
    if not (directory / DUNE).is_file():
        return None
    root = tree_root(directory)
    if root is None:
        return None
    relative = directory.relative_to(root).as_posix()
    own = theory_of((directory / DUNE).read_text(errors="replace"), relative)
    if own is None:
        return None
    known = theories(root)
    order: list[Theory] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in known:
            return
        seen.add(name)
        for need in known[name].needs:
            visit(need)
        order.append(known[name])

    for name in own.needs:
        visit(name)
    return root, [(t.directory, t.name) for t in order]
