"""HOL Light sources as HOL Light runs them: every `needs`/`loadt`/`loads` inlined.

A file is split into top-level phrases by HOL Light's own parser (a `Splitter`, such as
`WarmProcess.split`), never by regular expressions. Loads resolve as in hol.ml: `loads`
in the HOL Light directory, `loadt` and `needs` in the development's root, then the HOL
Light directory. `needs` skips a file already loaded, by base name and digest as HOL
Light does, including the files the HOL Light core loaded (`core_file_ids`). The result
remembers where every piece of text came from, so that an offset in the inlined text
leads back to a (file, line).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from proofeval.errors import InputError
from proofeval.provers.hol_light.protocol import TOO_OLD, Phrase


class Evaluator(Protocol):
    """What core_file_ids needs of a warm process (server.WarmProcess)."""

    def eval_string(self, expr: str) -> str: ...


Splitter = Callable[[Path], list[Phrase]]
FileId = tuple[str, str]  # (base name, MD5 hex digest): HOL Light's identity of a loaded file

ENCODING = "utf-8"
ERRORS = "surrogateescape"  # keeps any byte that is not UTF-8 through a round trip


def decode(data: bytes) -> str:
    return data.decode(ENCODING, ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


def file_id(path: Path) -> FileId:
    return path.name, hashlib.md5(path.read_bytes()).hexdigest()


def core_file_ids(proc: Evaluator) -> set[FileId]:
    """The files HOL Light has loaded in `proc` (its `loaded_files`)."""
    listing = proc.eval_string(
        'String.concat "\\n" (List.map (fun (b, d) -> b ^ " " ^ Digest.to_hex d) !loaded_files)'
    )
    ids = set()
    for line in listing.splitlines():
        name, _, digest = line.rpartition(" ")
        ids.add((name, digest))
    return ids


@dataclass(frozen=True)
class LoadPath:
    """Where HOL Light looks for a loaded file: the development's root ("." when HOL
    Light runs there), then the HOL Light directory ("$")."""

    root: Path
    hol_dir: Path

    def resolve(self, function: str, name: str) -> Path | None:
        if name.startswith("$/"):
            return _existing(self.hol_dir / name[2:])
        if Path(name).is_absolute():
            return _existing(Path(name))
        places = [self.hol_dir] if function == "loads" else [self.root, self.hol_dir]
        for place in places:
            found = _existing(place / name)
            if found is not None:
                return found
        return None


def _existing(path: Path) -> Path | None:
    return path.resolve() if path.is_file() else None


@dataclass(frozen=True)
class Theorem:
    """A top-level `let name = prove(goal, tactic)` in the inlined text; spans are
    character offsets into that text."""

    name: str
    file: Path  # the source file it is written in
    line: int  # where its phrase starts in that file
    offset: int  # ...and the byte there: (file, offset) is the binding, wherever inlined
    span: tuple[int, int]  # the phrase, up to and including its `;;`
    goal: tuple[int, int]
    tactic: tuple[int, int]


@dataclass
class Inlined:
    """One source file with its loads inlined."""

    source: Path
    text: str = ""
    theorems: list[Theorem] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # every file inlined, in order
    _starts: list[int] = field(default_factory=list)  # offsets where a piece of a file begins
    _origins: list[tuple[Path, int]] = field(default_factory=list)  # that file and line

    def location(self, offset: int) -> tuple[Path, int]:
        """The (file, line) that the character at `offset` of the text comes from."""
        i = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        path, line = self._origins[i]
        return path, line + self.text.count("\n", self._starts[i], offset)


class _Writer:
    """Accumulates an Inlined's text piece by piece (joined once at the end)."""

    def __init__(self, out: _Writer) -> None:
        self.out = out
        self.parts: list[str] = []
        self.length = 0

    def append(self, text: str, path: Path, line: int) -> None:
        if text:
            self.out._starts.append(self.length)
            self.out._origins.append((path, line))
            self.parts.append(text)
            self.length += len(text)

    def ends_line(self) -> bool:
        return not self.parts or self.parts[-1].endswith("\n")

    def finish(self) -> Inlined:
        self.out.text = "".join(self.parts)
        return self.out


class Inliner:
    """Inlines source files; splits each file once however often it is inlined."""

    def __init__(
        self,
        split: Splitter,
        load_path: LoadPath,
        preloaded: set[FileId],
        visible: Callable[[Path], bool] = lambda _path: True,
    ) -> None:
        """`visible`: which files it may read (a context compiled for the sandbox reads
        only what the sandbox shows: a client's header could otherwise load any file of
        the host's into its context)."""
        self.split = split
        self.load_path = load_path
        self.preloaded = preloaded
        self.visible = visible
        self._files: dict[Path, tuple[bytes, list[Phrase]]] = {}

    def inline(self, source: Path, preludes: tuple[Path, ...] = ()) -> Inlined:
        """`source` inlined, after the files `preludes` (loaded first, with `loadt`, as a
        development's build may load a base before each proof file)."""
        source = source.resolve()
        out = _Writer(Inlined(source))
        loaded = set(self.preloaded)
        for prelude in preludes:
            prelude = prelude.resolve()
            name = self._name(prelude)
            out.append(f"(* prelude {name}: inlined before {self._name(source)} *)\n", prelude, 1)
            self._inline_file(prelude, out, loaded, [])
        self._inline_file(source, out, loaded, [])
        return out.finish()

    def _name(self, path: Path) -> str:
        """A path as the development names it (contexts should not depend on where the
        development was checked out)."""
        for base in (self.load_path.root, self.load_path.hol_dir):
            if path.is_relative_to(base):
                return str(path.relative_to(base))
        return path.name

    def _read(self, path: Path) -> tuple[bytes, list[Phrase]]:
        if path not in self._files:
            if not self.visible(path):
                raise InputError(f"{path}: not visible in the sandbox")
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise InputError(f"{path}: cannot read: {exc.strerror}") from None
            self._files[path] = data, self.split(path)
        return self._files[path]

    def _inline_file(self, path: Path, out: _Writer, loaded: set[FileId], stack: list[Path]):
        if path in stack:
            chain = " -> ".join(str(p) for p in [*stack, path])
            raise InputError(f"{path}: loads itself: {chain}")
        data, phrases = self._read(path)
        loaded.add((path.name, hashlib.md5(data).hexdigest()))
        out.out.files.append(path)
        cursor = 0
        for phrase in phrases:
            if phrase.kind == "prove":
                self._copy(path, data, cursor, phrase.start, out)
                self._theorem(path, data, phrase, out)
                cursor = phrase.end
            elif phrase.kind == "load":
                self._copy(path, data, cursor, phrase.start, out)
                self._load(path, data, phrase, out, loaded, [*stack, path])
                cursor = phrase.end
        self._copy(path, data, cursor, len(data), out)
        if not out.ends_line():
            out.append("\n", path, _line(data, len(data)))

    def _copy(self, path: Path, data: bytes, start: int, end: int, out: _Writer) -> None:
        if end > start:
            out.append(decode(data[start:end]), path, _line(data, start))

    def _theorem(self, path: Path, data: bytes, phrase: Phrase, out: _Writer) -> None:
        assert phrase.goal is not None and phrase.tactic is not None
        base = out.length

        def at(offset: int) -> int:
            return base + len(decode(data[phrase.start : offset]))

        self._copy(path, data, phrase.start, phrase.end, out)
        out.out.theorems.append(
            Theorem(
                name=phrase.name,
                file=path,
                line=_line(data, phrase.start),
                offset=phrase.start,
                span=(base, out.length),
                goal=(at(phrase.goal[0]), at(phrase.goal[1])),
                tactic=(at(phrase.tactic[0]), at(phrase.tactic[1])),
            )
        )

    def _load(self, path, data, phrase: Phrase, out: _Writer, loaded: set[FileId], stack):
        line = _line(data, phrase.start)
        target = self.load_path.resolve(phrase.name, phrase.arg)
        if target is None:
            where = "the HOL Light directory" if phrase.name == "loads" else "the load path"
            raise InputError(
                f'{path}:{line}: {phrase.name} "{phrase.arg}": no such file on {where} '
                f"({self.load_path.root}, {self.load_path.hol_dir}); if it is a HOL Light "
                f"file, {TOO_OLD}"
            )
        call = f'{phrase.name} "{phrase.arg}"'
        if phrase.name == "needs" and file_id(target) in loaded:
            out.append(f"(* {call}: already loaded *)", path, line)
            return
        out.append(f"(* {call}: inlined *)\n", path, line)
        self._inline_file(target, out, loaded, stack)


def _line(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1
