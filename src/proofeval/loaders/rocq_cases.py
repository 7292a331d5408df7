"""Rocq trees in the PutnamBench / NTP4VC shape: one theorem per `.v` file with `Admitted.`
as its placeholder, a manifest listing the cases, and shared library files the cases
import, declared in the root's `_CoqProject` (`-Q DIR NAME` / `-R DIR NAME` lines).

The manifest is `cases.txt` or NTP4VC's `test_set.rocq.lst` (one path a line, relative
to the root; blank lines and `#` comments are skipped) or `cases.json` (a JSON list of such
paths) at the tree's root;
the benchmark path is the root or the manifest itself. A manifest of any other name is
given by `--manifest FILE` (paths relative to the benchmark directory, else the file's).
A case's problem is the theorem whose proof is `Admitted.` (the last one, if
several; else the one named as the file): its statement verbatim, the text before it as
the header, what follows dropped. A case with neither is skipped with its reason; the
others still load. The id is
the case's path without `.v`, the category its first directory under the root (NTP4VC's:
ntp4vc.py), and the problem's `directory` the root, from which the Coq checker reads
`_CoqProject`; without one, a case in a directory with a dune theory (NTP4VC) has that
directory, whose stanza names the theories the checker compiles (provers/coq/dune.py).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from proofeval.errors import InputError, read_text
from proofeval.loaders import ntp4vc
from proofeval.loaders.rocq_tree import Skipped, declared_name
from proofeval.model import Problem
from proofeval.provers.coq import dune
from proofeval.provers.coq.policy import DECLARATIONS
from proofeval.provers.coq.sentences import Sentence, SentenceError, split
from proofeval.provers.coq.session import PROJECT_FILE

MANIFESTS = ("cases.txt", "cases.json", ntp4vc.MANIFEST)


def manifest_of(path: Path) -> Path | None:
    """The manifest `path` names: itself (a file called cases.txt or cases.json), or the
    one at the root of the directory `path`; None when there is none."""
    if path.is_file():
        return path if path.name in MANIFESTS else None
    return next((path / m for m in MANIFESTS if (path / m).is_file()), None)


def load(
    manifest: Path, name: str, root: Path | None = None
) -> tuple[list[Problem], list[Skipped]]:
    """The cases `manifest` lists, in its order, under `root` (default: the manifest's
    directory); the cases skipped, with why."""
    root = (root or manifest.parent).resolve()
    problems: list[Problem] = []
    skipped: list[Skipped] = []
    seen: dict[str, str] = {}
    for where, entry in _entries(manifest):
        file = (root / entry).resolve()
        if not file.is_relative_to(root) or file == root:
            raise InputError(f"{where}: {entry!r} is not inside the tree {root}")
        if file.suffix != ".v" or not file.is_file():
            raise InputError(f"{where}: no such case file: {entry} (looked for {file})")
        relative = file.relative_to(root)
        pid = relative.with_suffix("").as_posix()
        if pid in seen:
            raise InputError(f"{where}: {entry} is listed twice (first at {seen[pid]})")
        seen[pid] = where
        category = ntp4vc.category(PurePosixPath(relative.as_posix())) or (
            relative.parts[0] if len(relative.parts) > 1 else "uncategorized"
        )
        try:
            problems.append(_problem(file, pid, category, name, _libraries(root, file)))
        except InputError as exc:
            skipped.append(Skipped(pid, str(exc)))
    if not problems:
        why = f" ({skipped[0].path}: {skipped[0].reason})" if skipped else ""
        raise InputError(f"{manifest}: lists no case that loads{why}")
    return problems, skipped


def _entries(manifest: Path) -> list[tuple[str, str]]:
    """(where, path) for each case: `cases.txt:3` or `cases.json: entry 3`."""
    text = read_text(manifest)
    if manifest.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{manifest}: not JSON: {exc}") from None
        if not isinstance(data, list):
            raise InputError(f"{manifest}: expected a JSON list of case paths")
        entries = []
        for number, item in enumerate(data, 1):
            if not isinstance(item, str) or not item.strip():
                raise InputError(f"{manifest}: entry {number}: expected a path, got {item!r}")
            entries.append((f"{manifest}: entry {number}", item.strip()))
        return entries
    lines = enumerate(text.splitlines(), 1)
    return [
        (f"{manifest}:{number}", line.strip())
        for number, line in lines
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _libraries(root: Path, file: Path) -> Path:
    """Where the checker finds a case's libraries: the root's _CoqProject, else the dune
    theory of the case's own directory (NTP4VC), else the root."""
    if (root / PROJECT_FILE).is_file() or not (file.parent / dune.DUNE).is_file():
        return root
    return file.parent


def _problem(file: Path, pid: str, category: str, benchmark: str, root: Path) -> Problem:
    text = read_text(file)
    try:
        sentences = split(text)
    except SentenceError as exc:
        raise InputError(f"does not split into sentences: {exc}") from None
    theorem = _admitted_theorem(sentences, file.stem)
    if theorem is None:
        raise InputError(f"no theorem with `Admitted.` and none named {file.stem}")
    return Problem(
        id=pid,
        statement=theorem.text + ".",
        prover="coq",
        benchmark=benchmark,
        category=category,
        header=text[: theorem.start].rstrip() + "\n",
        directory=str(root),
    )


def _admitted_theorem(sentences: list[Sentence], stem: str) -> Sentence | None:
    """The last declaration whose proof ends with `Admitted`; else the one named `stem`."""
    last: Sentence | None = None
    admitted: Sentence | None = None
    named: Sentence | None = None
    for sentence in sentences:
        words = sentence.code.split(None, 2)
        if len(words) >= 2 and words[0] in DECLARATIONS:
            last = sentence
            if declared_name(words[1]) == stem and named is None:
                named = sentence
        elif words == ["Admitted"] and last is not None:
            admitted = last
    return admitted or named
