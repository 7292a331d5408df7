"""A tree's Coq toolchain, detected from what the tree itself declares: the Coq version
its dune-project or opam files ask for, when neither `--coq` nor the problem names one.

The project of a directory is the nearest directory at or above it (up to the dune tree's
root) with a `dune-project` or `*.opam`. Its constraints are the versions its packages'
`depends` ask of Coq's packages (`(coq (= "9.0.0"))`, `(rocq-core (>= 9.0))`,
`"coq-core" {>= "8.20" & < "8.21~"}`), also through packages the same tree declares
(NTP4VC's case projects depend on `Why3Bench`, whose dune-project asks `coq = 9.0.0`);
`(using rocq ...)` or `(lang rocq ...)` in a dune-project asks for Rocq 9 or later.
The chosen toolchain is the installed one (host included) with the newest Coq that
satisfies every constraint (the host on a tie); when none does, the closest (by
major.minor version, the newer on a tie) with a warning naming `proofeval toolchain
add`. Without a constraint the host's Coq stays the default.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.provers.coq import dune
from proofeval.provers.coq.toolchain import HOST, installed, resolve

COQ_PACKAGES = frozenset(
    {"coq", "coq-core", "coq-stdlib", "rocq-core", "rocq-prover", "rocq-stdlib", "rocq-runtime"}
)
ROCQ = (">=", "9.0")  # what `(using rocq ...)` asks
OPS = ("=", "!=", "<>", ">=", "<=", ">", "<")
_OPAM_TOKEN = re.compile(r'"[^"]*"|>=|<=|!=|[=<>&|(){}\[\]!]|[^\s"=<>&|(){}\[\]!]+')


@dataclass(frozen=True)
class Constraint:
    where: str  # the file, relative to the tree's root
    package: str
    formula: object  # ("op", version) or ("and"|"or", [formulas]); None: any version

    def text(self) -> str:
        return f"{self.package} {show(self.formula)} ({self.where})"


@dataclass(frozen=True)
class Choice:
    name: str  # "" for the host's Coq
    reason: str  # one line: which toolchain and why ("" when nothing was declared)
    warning: bool = False  # no installed toolchain satisfies the tree


def version_key(version: str) -> tuple[int, ...]:
    """A version as numbers to compare, opam's way for what matters here: "8.21~" sorts
    just before "8.21", "9.0" equals "9.0.0"."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("~")[0])]
    return tuple(numbers + ([-1] if "~" in version else []))


def compare(left: str, right: str) -> int:
    a, b = version_key(left), version_key(right)
    size = max(len(a), len(b))
    a, b = a + (0,) * (size - len(a)), b + (0,) * (size - len(b))
    return (a > b) - (a < b)


def satisfies(version: str, formula: object) -> bool:
    if formula is None:
        return True
    head, rest = formula  # type: ignore[misc]
    if head == "and":
        return all(satisfies(version, f) for f in rest)
    if head == "or":
        return any(satisfies(version, f) for f in rest)
    c = compare(version, rest)
    return {"=": c == 0, "!=": c != 0, "<>": c != 0, ">=": c >= 0, "<=": c <= 0,
            ">": c > 0, "<": c < 0}[head]  # fmt: skip


def show(formula: object) -> str:
    if formula is None:
        return "(any version)"
    head, rest = formula  # type: ignore[misc]
    if head in ("and", "or"):
        return f" {'&' if head == 'and' else '|'} ".join(show(f) for f in rest)
    return f"{head} {rest}"


# --- dune-project -------------------------------------------------------------------


def _dune_formula(sexp: object) -> object:
    """A dune dependency formula (`(>= 8.20)`, `(and ...)`) as a formula; None for what
    says nothing of the version (`:with-test`)."""
    if not isinstance(sexp, list) or not sexp:
        return None
    head = sexp[0]
    if head in ("and", "or"):
        parts = [f for f in map(_dune_formula, sexp[1:]) if f is not None]
        return (head, parts) if parts else None
    if head in OPS and len(sexp) == 2 and isinstance(sexp[1], str):
        return None if sexp[1].startswith(":") else (head, sexp[1])
    return None


def dune_project(text: str) -> tuple[dict[str, list[object]], bool]:
    """({package: its depends entries}, whether it uses Rocq's dune language)."""
    packages: dict[str, list[object]] = {}
    rocq = False
    for sexp in dune.parse_sexps(text):
        if not isinstance(sexp, list) or not sexp:
            continue
        if sexp[0] in ("using", "lang") and len(sexp) > 1 and sexp[1] == "rocq":
            rocq = True
        if sexp[0] == "package":
            fields = {f[0]: f[1:] for f in sexp[1:] if isinstance(f, list) and f}
            name = next(iter(fields.get("name", [])), "")
            packages[str(name)] = list(fields.get("depends", []))
    return packages, rocq


def _dune_depends(entries: list[object]) -> list[tuple[str, object]]:
    found = []
    for entry in entries:
        if isinstance(entry, str):
            found.append((entry, None))
        elif isinstance(entry, list) and entry and isinstance(entry[0], str):
            parts = [f for f in map(_dune_formula, entry[1:]) if f is not None]
            found.append((entry[0], ("and", parts) if len(parts) > 1 else next(iter(parts), None)))
    return found


# --- opam -----------------------------------------------------------------------------


def opam_depends(text: str) -> list[tuple[str, object]]:
    """The `depends: [...]` entries of an opam file: (package, formula)."""
    start = re.search(r"^\s*depends\s*:\s*\[", text, re.MULTILINE)
    if start is None:
        return []
    tokens = _OPAM_TOKEN.findall(text[start.end() :])
    found: list[tuple[str, object]] = []
    i = 0
    while i < len(tokens) and tokens[i] != "]":
        if tokens[i].startswith('"'):
            name, i = tokens[i].strip('"'), i + 1
            formula = None
            if i < len(tokens) and tokens[i] == "{":
                end = _closing(tokens, i)
                formula = _Opam(tokens[i + 1 : end]).formula()
                i = end + 1
            found.append((name, formula))
        else:
            i += 1
    return found


def _closing(tokens: list[str], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j] == "{"
        depth -= tokens[j] == "}"
        if depth == 0:
            return j
    return len(tokens) - 1


class _Opam:
    """opam's filter formulas: `|` of `&` of atoms (`>= "8.18"`, a flag, or parentheses)."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.i = 0

    def formula(self) -> object:
        return self._either()

    def _either(self) -> object:
        parts = [self._both()]
        while self._next("|"):
            parts.append(self._both())
        return _combine("or", parts)

    def _both(self) -> object:
        parts = [self._atom()]
        while self._next("&"):
            parts.append(self._atom())
        return _combine("and", parts)

    def _atom(self) -> object:
        if self._next("("):
            inner = self._either()
            self._next(")")
            return inner
        if self.i < len(self.tokens) and self.tokens[self.i] in OPS:
            op = self.tokens[self.i]
            self.i += 1
            if self.i < len(self.tokens) and self.tokens[self.i].startswith('"'):
                self.i += 1
                return (op, self.tokens[self.i - 1].strip('"'))
            return None
        self.i += 1  # a flag (with-test, build) or a variable: no version asked
        return None

    def _next(self, token: str) -> bool:
        if self.i < len(self.tokens) and self.tokens[self.i] == token:
            self.i += 1
            return True
        return False


def _combine(head: str, parts: list[object]) -> object:
    kept = [p for p in parts if p is not None]
    if head == "or" and len(kept) < len(parts):
        return None  # one alternative asks nothing of Coq
    return kept[0] if len(kept) == 1 else ((head, kept) if kept else None)


# --- a tree's declarations ------------------------------------------------------------


@dataclass(frozen=True)
class _Declared:
    depends: dict[str, list[tuple[str, object]]]  # package -> (package, formula)
    where: dict[str, str]  # package -> the file declaring it


def _read(file: Path, root: Path, declared: _Declared) -> list[str]:
    """Add `file`'s packages to `declared`; the packages it declares."""
    shown = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
    text = file.read_text(errors="replace")
    if file.name == "dune-project":
        raw, rocq = dune_project(text)
        packages = {name: _dune_depends(entries) for name, entries in raw.items()}
        if rocq:
            packages.setdefault("", []).append(("rocq", ROCQ))
    else:
        packages = {file.name.removesuffix(".opam"): opam_depends(text)}
    for name, depends in packages.items():
        declared.depends.setdefault(name or shown, depends)
        declared.where.setdefault(name or shown, shown)
    return [name or shown for name in packages]


@functools.cache
def _tree(root: Path) -> _Declared:
    """Every package the dune-project and opam files under `root` declare."""
    declared = _Declared({}, {})
    for here, dirs, files in os.walk(root):
        dirs.sort()
        dirs[:] = [d for d in dirs if not d.startswith((".", "_build", "_opam"))]
        for name in sorted(files):
            if name == "dune-project" or name.endswith(".opam"):
                _read(Path(here, name), root, declared)
    return declared


def _project(directory: Path, root: Path) -> Path | None:
    for here in [directory, *directory.parents]:
        if (here / "dune-project").is_file() or any(here.glob("*.opam")):
            return here
        if here == root or not here.is_relative_to(root):
            return None
    return None


def constraints(directory: Path) -> list[Constraint]:
    """What the project of `directory` (see the module's text) asks of Coq's version."""
    directory = directory.resolve()
    root = dune.tree_root(directory) or directory
    project = _project(directory, root)
    if project is None:
        return []
    own = _Declared({}, {})
    files = [*sorted(project.glob("*.opam")), project / "dune-project"]
    names = [n for f in files if f.is_file() for n in _read(f, root, own)]
    declared = _tree(root)
    found: list[Constraint] = []
    seen: set[str] = set()
    todo = [(n, own.where[n], own.depends[n]) for n in names]
    while todo:
        name, where, depends = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        for package, formula in depends:
            if package == "rocq" or package in COQ_PACKAGES:
                shown = "Rocq (the dune language)" if package == "rocq" else package
                found.append(Constraint(where, shown, formula))
            elif package in declared.depends:
                todo.append((package, declared.where[package], declared.depends[package]))
    return found


@functools.cache
def choose(directory: str) -> Choice:
    """The toolchain for problems of `directory` that name none (see the module's text)."""
    asked = constraints(Path(directory))
    if not asked:
        return Choice("", "")
    versions: dict[str, str] = {}
    for name in [HOST, *installed()]:
        try:
            versions[name] = resolve(name).version()
        except InputError:
            continue  # no Coq on the host
    said = "; ".join(c.text() for c in asked)
    fits = [n for n, v in versions.items() if all(satisfies(v, c.formula) for c in asked)]
    if fits:
        best = max(fits, key=lambda n: (version_key(versions[n]), n == HOST))  # a tie: the host
        return Choice(_name(best), f"Coq {versions[best]} ({best}), as the tree asks: {said}")
    if not versions:
        return Choice("", "")
    closest = min(versions, key=lambda n: (_distance(versions[n], asked), _newest(versions[n])))
    return Choice(
        _name(closest),
        f"no installed Coq satisfies {said}; using the closest, Coq {versions[closest]} "
        f"({closest}): build one with `proofeval toolchain add NAME`",
        warning=True,
    )


def _distance(version: str, asked: list[Constraint]) -> int:
    """How far `version` is from the versions the tree names, by major.minor."""

    def number(v: str) -> int:
        key = version_key(v) + (0, 0)
        return key[0] * 100 + key[1]

    return sum(
        min((abs(number(version) - number(v)) for _op, v in _bounds(c.formula)), default=0)
        for c in asked
        if not satisfies(version, c.formula)
    )


def _newest(version: str) -> tuple[int, ...]:
    return tuple(-n for n in version_key(version))  # a tie goes to the newer Coq


def _bounds(formula: object) -> list[tuple[str, str]]:
    if formula is None:
        return []
    head, rest = formula  # type: ignore[misc]
    if head in ("and", "or"):
        return [b for f in rest for b in _bounds(f)]
    return [(head, rest)]


def _name(name: str) -> str:
    return "" if name == HOST else name


def toolchain_for(given: str, problem_toolchain: str, directory: str) -> tuple[str, Choice | None]:
    """The toolchain a problem runs on: `given` (--coq) first, then the problem's own
    field, then what its tree declares (with the Choice that says why); "" is the host."""
    if given or problem_toolchain:
        return given or problem_toolchain, None
    if not directory:
        return "", None
    choice = choose(directory)
    return choice.name, choice if choice.reason else None
