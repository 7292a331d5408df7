"""A tree's libraries for coqtop: the load paths of a directory's _CoqProject or dune
stanza, and the library files its header needs, compiled once into a scratch copy under
the run's work directory (the tree itself may be read-only, and nothing is written into
it). The sandbox shows the copy because it is inside the work directory.

One copy per tree and toolchain (`TreeCopy`), shared by every directory of the tree that a
run checks (NTP4VC: 600 cases in 202 directories of one dune tree): each directory of
theories is copied once, coqdep reads each library file once, each `.vo` is fetched from
the build cache (libraries.py) or compiled once. A file in the copy is never rewritten
(an earlier design copied a tree again per directory and raced with readers); everything
that writes into the copy holds the copy's lock. What a header needs is coqdep's answer,
kept in the build cache under its inputs (the header's text, the load paths and the
names of the files under them, the Coq), and so is what coqdep said of the library files
(under their texts too), so a second run asks coqdep nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.provers.coq import compat, dune, libraries
from proofeval.provers.coq.session import (
    PATH,
    PROJECT_FILE,
    Limits,
    coq_version,
    newer_rocq_hint,
    tail,
)
from proofeval.provers.coq.toolchain import OCAML_RUNTIME, Toolchain

BUILD_LIMIT = 600.0  # seconds to compile one library file
# coqdep's warning for a library it cannot find (8.20 wraps it over lines: read it with
# the whitespace collapsed); the group is the file that needs it
MISSING = re.compile(r"in file (\S+\.v), library \S+ is required and has not been found")


@dataclass(frozen=True)
class LoadPath:
    flag: str  # -Q or -R
    directory: str  # relative to the tree's root, as _CoqProject writes it
    logical: str


def project_load_paths(root: Path) -> list[LoadPath]:
    """The `-Q DIR NAME` / `-R DIR NAME` lines of `root/_CoqProject` ([] without one;
    other options and file names in it are ignored)."""
    file = root / PROJECT_FILE
    if not file.is_file():
        return []
    try:
        words = shlex.split(file.read_text(errors="replace"), comments=True)
    except ValueError as exc:  # an unclosed quote
        raise CheckerError(f"{file}: {exc}") from None
    found = []
    for i, word in enumerate(words):
        if word in ("-Q", "-R"):
            if i + 2 >= len(words):
                raise CheckerError(f"{file}: {word} needs a directory and a logical name")
            found.append(LoadPath(word, words[i + 1], words[i + 2]))
    return found


def tree_load_paths(directory: Path) -> tuple[Path, list[LoadPath]]:
    """(the tree's root, its load paths): `directory`'s _CoqProject, else its dune
    stanza's theories (dune.py), whose root is the dune tree's; else none."""
    if not (directory / PROJECT_FILE).is_file():
        found = dune.load_paths(directory)
        if found is not None:
            root, paths = found
            return root, [LoadPath("-Q", where, logical) for where, logical in paths]
    return directory, project_load_paths(directory)


def coq_identity(chain: Toolchain) -> str:
    """The Coq that compiles library files, for the build cache: toolchain and version."""
    return f"{chain.name} {chain.root} {coq_version(chain)} {' '.join(chain.coq_flags)}"


def installed_library(directory: str, chain: Toolchain) -> Path | None:
    """Where a _CoqProject directory that names a library installed in the toolchain's
    system (an absolute path under /usr, such as Why3's Coq library) is, as this process
    sees it (under the toolchain's root); None for a directory of the tree. Such a library
    is compiled already, used in place, and shown read-only in the sandbox with its /usr."""
    if not Path(directory).is_absolute():
        return None
    inside = (chain.root / directory.lstrip("/")).resolve()
    usr = (chain.root / "usr").resolve()
    return inside if inside.is_relative_to(usr) else None


class TreeCopy:
    """One tree's scratch copy for one toolchain (see the module's text)."""

    def __init__(
        self, root: Path, workdir: Path, limits: Limits, workers: int = 1,
        cache: libraries.Cache | None = None,
    ) -> None:  # fmt: skip
        self.root = root
        self.workdir = workdir
        self.limits = limits
        self.workers = workers  # library files compiled at once
        self.lock = threading.Lock()
        digest = hashlib.sha256(bytes(root)).hexdigest()[:16]
        self.copy = workdir / f"project_{digest}_{limits.chain.name}"  # .vo files are Coq's own
        self.cache = cache or libraries.Cache()
        self.applied: set[str] = set()  # the compatibility rules the copy needed
        self.graph: dict[str, list[str]] = {}  # .vo -> the .vo files it needs (coqdep)
        self._copied: set[Path] = set()  # directories of the tree copied (resolved)
        self._compiled: set[str] = set()
        self._keys: dict[str, str] = {}
        self.copy.mkdir(parents=True, exist_ok=True)
        (self.copy / "ocamlfind.conf").write_text(f'path="{limits.chain.ocaml_path()}"\n')

    def add(self, source: Path) -> Path:
        """The copy of the tree's directory `source`, made once: files already copied (a
        directory inside one copied before) are left as they are, never rewritten."""
        target = self.copy / source.relative_to(self.root)
        if any(source.is_relative_to(done) for done in self._copied):
            return target
        new: list[Path] = []

        def copy_new(src: str, dst: str) -> None:
            if not Path(dst).exists():
                shutil.copyfile(src, dst)  # a read-only tree copies so
                new.append(Path(dst))

        shutil.copytree(source, target, dirs_exist_ok=True, copy_function=copy_new)
        version = coq_version(self.limits.chain)
        for copied in [target, *target.rglob("*")]:
            copied.chmod(copied.stat().st_mode | stat.S_IRWXU)
        for copied in new:
            if copied.suffix == ".v":
                text, applied = compat.apply(copied.read_text(errors="replace"), version)
                if applied:
                    copied.write_text(text)
                    self.applied.update(applied)
        self._copied.add(source)
        return target

    def read_dependencies(self, directories: list[Path], flags: list[str], names: str) -> None:
        """Add to `graph` the library files under `directories` that it does not know,
        as coqdep resolves them with `flags` (from the build cache when coqdep was asked
        the same before: `names` sums up the files under the load paths). A file whose
        needs coqdep could not all find is left out: the flags of another directory may
        find them."""
        sources = sorted(
            str(f) for d in directories for f in d.rglob("*.v") if f"{f}o" not in self.graph
        )
        if not sources:
            return
        texts = [f"{self._relative(f)}\n{Path(f).read_text(errors='replace')}" for f in sources]
        relative = [self._relative(f) for f in flags]
        key = libraries.key(coq_identity(self.limits.chain), "coqdep-libraries", names,
                            [*relative, *texts])  # fmt: skip
        known = self.cache.fetch_data(key)
        if isinstance(known, dict) and all(isinstance(v, list) for v in known.values()):
            for target, needs in known.items():
                self.graph.setdefault(self._absolute(target), [self._absolute(n) for n in needs])
            return
        done = self.run(["coqdep", *flags, *sources])
        missing = set(MISSING.findall(" ".join(done.stderr.split())))
        found = {t: n for t, n in parse_coqdep(done.stdout).items() if t[:-1] not in missing}
        for target, needs in found.items():
            self.graph.setdefault(target, needs)
        if done.returncode == 0:
            kept = {self._relative(t): [self._relative(n) for n in ns] for t, ns in found.items()}
            self.cache.store_data(key, kept)

    def header_needs(self, header_file: Path, flags: list[str], names: str) -> list[str]:
        """The library files of the copy the header in `header_file` needs (directly), from
        the build cache when coqdep was asked the same before; `names` sums up the files
        under the load paths, which decide what coqdep finds."""
        text = header_file.read_text(errors="replace")
        relative = [self._relative(f) for f in flags]
        key = libraries.key(coq_identity(self.limits.chain), "coqdep", text, [*relative, names])
        known = self.cache.fetch_data(key)
        if isinstance(known, list) and all(isinstance(n, str) for n in known):
            return [str(self.copy / n) for n in known]
        done = self.run(["coqdep", *flags, str(header_file)])
        needs = parse_coqdep(done.stdout).get(str(header_file.with_suffix(".vo")), [])
        inside = [n for n in needs if Path(n).is_relative_to(self.copy)]
        if done.returncode == 0 and not MISSING.search(" ".join(done.stderr.split())):
            self.cache.store_data(key, [Path(n).relative_to(self.copy).as_posix() for n in inside])
        return inside

    def _relative(self, flag: str) -> str:
        """A path of the copy as the build cache keeps it (the copy's place changes with
        every run); any other word as it is."""
        path = Path(flag)
        if path.is_relative_to(self.copy):
            return "@copy/" + path.relative_to(self.copy).as_posix()
        return flag

    def _absolute(self, kept: str) -> str:
        return str(self.copy / kept.removeprefix("@copy/")) if kept.startswith("@copy/") else kept

    def build(self, needs: list[str], flags: list[str]) -> None:
        """Fetch or compile `needs` and what they need, dependencies first."""
        order: list[str] = []
        seen: set[str] = set()
        for vo in needs:
            self._visit(vo, order, seen)
        todo = [vo for vo in order if vo not in self._compiled]
        identity = coq_identity(self.limits.chain)
        for vo in todo:  # keys in dependency order, before any file compiles
            needed = [self._keys.get(n, n) for n in self.graph.get(vo, [])]
            text = Path(vo[:-1]).read_text(errors="replace")
            logical = Path(vo).relative_to(self.copy).as_posix()
            self._keys[vo] = libraries.key(identity, logical, text, needed)

        def build_one(vo: str) -> None:
            self._build(vo, flags)

        libraries.build_in_order(todo, self.graph, build_one, self.workers)
        self._compiled.update(todo)

    def _visit(self, vo: str, order: list[str], seen: set[str]) -> None:
        if vo in seen:
            return
        seen.add(vo)
        for need in self.graph.get(vo, []):
            if Path(need).is_relative_to(self.copy):
                self._visit(need, order, seen)
        order.append(vo)

    def _build(self, vo: str, flags: list[str]) -> None:
        """`vo` from the cache, else compiled and kept there."""
        with self.cache.lock(self._keys[vo]):
            if not self.cache.fetch(self._keys[vo], Path(vo)):
                start = time.monotonic()
                self._compile(vo[:-1], flags)
                self.cache.store(self._keys[vo], Path(vo), time.monotonic() - start)

    def _compile(self, source: str, flags: list[str]) -> None:
        done = self.run(["coqc", "-q", *self.limits.chain.coq_flags, *flags, source])
        if done.returncode != 0:
            shown = Path(source).relative_to(self.copy)
            said = (done.stderr or done.stdout).replace(f"{self.copy}/", "")  # paths as the tree's
            why = error_part(said) or f"exit {done.returncode}"
            text = Path(source).read_text(errors="replace")
            hint = newer_rocq_hint(text, said, self.limits.chain)
            # the reason first: a verdict's message is cut at its limit, Coq's text may be long
            raise CheckerError(f"the library file {shown} does not compile{hint}: {why}")

    def run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        """`command` (one of the toolchain's programs) in the copy, in its sandbox."""
        memory = self.limits.memory_mb * 1024 * 1024
        cmd = ["prlimit", f"--as={memory}", "--core=0", "--", *command]
        sandbox = self.limits.chain.sandbox([self.copy], [self.workdir], self.limits.sandbox)
        env = {"PATH": PATH, "HOME": "/var/tmp", "LANG": "C.UTF-8", **OCAML_RUNTIME}
        env["OCAMLFIND_CONF"] = str(self.copy / "ocamlfind.conf")
        try:
            return subprocess.run(
                sandbox + cmd,
                cwd=self.copy,
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_LIMIT,
            )
        except subprocess.TimeoutExpired:
            raise CheckerError(f"{command[0]} gave no answer in {BUILD_LIMIT:.0f} s") from None


def parse_coqdep(output: str) -> dict[str, list[str]]:
    """coqdep's lines `X.vo X.glob ...: X.v Y.vo ...` as {X.vo: [Y.vo, ...]}."""
    graph: dict[str, list[str]] = {}
    for line in output.splitlines():
        targets, _, needs = line.partition(":")
        first = (targets.split() or [""])[0]
        if first.endswith(".vo"):
            graph[first] = [d for d in needs.split() if d.endswith(".vo")]
    return graph


def error_part(said: str, size: int = 300) -> str:
    """What to show of a failed coqc's output: from its last `Error:` (Coq 8.20 prints
    many deprecation warnings, which would fill the end), else its end; one line."""
    found = said.rfind("Error:")
    if found >= 0:
        return " ".join(said[found:].split())[:size]
    return tail(said, size)


class Project:
    """The load paths of one directory (its _CoqProject or dune stanza) on a tree's copy:
    `prepare` gives coqtop its flags after the library files a header needs are there."""

    def __init__(self, tree: TreeCopy, root: Path, paths: list[LoadPath]) -> None:
        self.tree = tree
        self.root = root
        self.paths = paths
        self.flags: list[str] = []
        self._targets: list[Path] = []
        self._names = ""
        self._ready = False

    @property
    def copy(self) -> Path:
        return self.tree.copy

    @property
    def applied(self) -> set[str]:
        return self.tree.applied

    def prepare(self, header_file: Path) -> list[str]:
        """The coqtop flags for a header in `header_file`, after fetching or compiling the
        library files it needs; CheckerError saying which file failed and why."""
        if not self.paths:
            return []
        with self.tree.lock:
            if not self._ready:
                self._add_paths()
            needs = self.tree.header_needs(header_file, self.flags, self._names)
            self.tree.build(needs, self.flags)
        return self.flags

    def _add_paths(self) -> None:
        chain = self.tree.limits.chain
        flags: list[str] = []
        for path in self.paths:
            shown = f"{PROJECT_FILE}: {path.flag} {path.directory} {path.logical}"
            installed = installed_library(path.directory, chain)
            if installed is not None:
                if not installed.is_dir():
                    raise CheckerError(f"{shown}: no directory {path.directory} in the Coq "
                                       f"of {chain.describe()} (is it installed?)")  # fmt: skip
                flags += [path.flag, path.directory, path.logical]  # used in place
                continue
            source = (self.root / path.directory).resolve()
            if not source.is_relative_to(self.root):
                raise CheckerError(f"{shown}: {source} is outside the tree {self.root}")
            if not source.is_dir():
                raise CheckerError(f"{shown}: no directory {source}")
            self._check_links(source)
            target = self.tree.add(source)
            self._targets.append(target)
            flags += [path.flag, str(target), path.logical]
        self.flags = flags
        names = sorted(
            f.relative_to(self.copy).as_posix() for t in self._targets for f in t.rglob("*.v")
        )
        self._names = hashlib.sha256(json.dumps(names).encode()).hexdigest()
        self.tree.read_dependencies(self._targets, flags, self._names)
        self._ready = True

    def _check_links(self, source: Path) -> None:
        """CheckerError for a symbolic link under `source` that leads outside the tree."""
        for path in [source, *source.rglob("*")]:
            if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                shown = path.relative_to(self.root)
                raise CheckerError(f"{shown} is a link to {path.resolve()}, outside the tree")


def open_project(
    directory: Path, workdir: Path, limits: Limits, trees: dict[tuple[Path, str], TreeCopy],
    workers: int = 1, cache: libraries.Cache | None = None,
) -> Project:  # fmt: skip
    """The project of `directory`, on its tree's copy in `trees` (made when missing; the
    caller holds whatever lock guards `trees`)."""
    root, paths = tree_load_paths(directory.resolve())
    key = (root, limits.chain.name)
    if key not in trees:
        trees[key] = TreeCopy(root, workdir, limits, workers, cache)
    return Project(trees[key], root, paths)
