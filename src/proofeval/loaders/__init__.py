"""Benchmark loaders: a path given by the user becomes problems (and any shipped answers)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proofeval.errors import InputError, read_text
from proofeval.loaders import (
    minif2f_hollight,
    minif2f_rocq,
    native_jsonl,
    rocq_cases,
    rocq_tree,
    s2n_layout,
    s2n_official,
    why3_vcs,
)
from proofeval.loaders.rocq_tree import Skipped
from proofeval.model import Attempt, Problem

# Every layout load_benchmark reads, as error messages and --help name them.
LAYOUTS = (
    "s2n-bignum-bench (an official build with problems.json, or <id>/setup.ml + query.txt "
    "subdirectories); a plain tree of Rocq .v files, one theorem each, ids from their paths "
    "(PutnamBench's coq/ or coq/src/); a Rocq tree with a case manifest (cases.txt or "
    "cases.json at its root, or any file given by --manifest); NTP4VC as published (its "
    "test_set.rocq.lst, libraries from its dune files); miniF2F-rocq (a directory "
    "with test/ and valid/ of .v files); miniF2F's HOL Light (test/ and valid/ of .ml "
    "files, each `let name = `term`;;`); verification conditions `build why3` or "
    "`build frama-c` wrote; a .jsonl file of problems (proofeval's own or NeMo-Skills')"
)


@dataclass
class Benchmark:
    name: str
    problems: list[Problem]
    answers: list[Attempt]
    source: Path
    skipped: list[Skipped] = field(default_factory=list)  # cases that did not load, and why
    unselected: frozenset[str] = frozenset()  # ids of problems --only left out


@dataclass(frozen=True)
class Selection:
    """How to read a benchmark beyond its path: a manifest of any name, the ids or globs
    to keep (`--only`), how a plain Rocq tree's cases get their categories, and how many
    of the problems left to keep (`--limit`)."""

    manifest: Path | None = None
    only: tuple[str, ...] = ()
    categories: str = "directory"
    limit: int | None = None  # `--limit N`: the first N problems (after --only), in order


def load_benchmark(path: Path, selection: Selection = Selection()) -> Benchmark:
    """The benchmark at `path` (see LAYOUTS), with `selection` applied."""
    bench = _load(path, selection)
    if selection.only:
        bench = _select(bench, only_patterns(selection.only))
    if selection.limit is not None and selection.limit < len(bench.problems):
        bench = _first(bench, selection.limit)
    return bench


def _first(bench: Benchmark, limit: int) -> Benchmark:
    """`bench` with its first `limit` problems, in the benchmark's own order."""
    kept = bench.problems[:limit]
    keep = {p.id for p in kept}
    left = frozenset(p.id for p in bench.problems[limit:])
    answers = [a for a in bench.answers if a.problem_id in keep]
    return Benchmark(
        bench.name, kept, answers, bench.source, bench.skipped, bench.unselected | left
    )


def _load(path: Path, selection: Selection) -> Benchmark:
    if selection.manifest is not None:
        return _from_manifest(path, selection.manifest)
    manifest = rocq_cases.manifest_of(path)
    if manifest is not None:
        name = manifest.parent.resolve().name
        return _rocq_cases(manifest, name, manifest.parent, path)
    if path.is_dir():
        return _directory(path, selection)
    if not path.exists():
        raise InputError(f"no such file or directory: {path}")
    if path.suffix == ".jsonl":
        return Benchmark(path.stem, native_jsonl.load(path, path.stem), [], path)
    raise InputError(f"{path}: not a benchmark. proofeval reads: {LAYOUTS}")


def _directory(path: Path, selection: Selection) -> Benchmark:
    name = path.resolve().name
    if why3_vcs.is_why3_vcs(path):
        return Benchmark(name, why3_vcs.load(path, name), [], path)
    if s2n_official.is_official(path) or any(s2n_layout.is_problem(d) for d in path.iterdir()):
        reader = s2n_official if s2n_official.is_official(path) else s2n_layout
        problems, answers = reader.load(path, name)
        return Benchmark(name, problems, answers, path)
    if minif2f_rocq.is_minif2f_rocq(path):
        return Benchmark(name, minif2f_rocq.load(path, name), [], path)
    if minif2f_hollight.is_minif2f_hollight(path):
        return Benchmark(name, minif2f_hollight.load(path, name), [], path)
    root = rocq_tree.tree_root(path)
    if root is not None:
        rocq_tree.check_scheme(selection.categories)
        problems, skipped = rocq_tree.load(root, name, selection.categories)
        return Benchmark(name, problems, [], path, skipped)
    raise InputError(f"{path}: no problems in any layout proofeval reads: {LAYOUTS}")


def _from_manifest(path: Path, manifest: Path) -> Benchmark:
    if not manifest.is_file():
        raise InputError(f"--manifest {manifest}: no such file")
    root = path if path.is_dir() else manifest.parent
    return _rocq_cases(manifest, root.resolve().name, root, path)


def _rocq_cases(manifest: Path, name: str, root: Path, path: Path) -> Benchmark:
    problems, skipped = rocq_cases.load(manifest, name, root)
    return Benchmark(name, problems, [], path, skipped)


def only_patterns(given: Sequence[str]) -> list[str]:
    """The ids and globs of `--only` values: comma-separated, or `@FILE` for a file of
    them (one a line, `#` comments)."""
    patterns: list[str] = []
    for value in given:
        if value.startswith("@"):
            lines = read_text(Path(value[1:])).splitlines()
            patterns += [line.strip() for line in lines if line.strip() and line[0] != "#"]
        else:
            patterns += [part.strip() for part in value.split(",") if part.strip()]
    if not patterns:
        raise InputError("--only: no ids or patterns given")
    return patterns


def _select(bench: Benchmark, patterns: list[str]) -> Benchmark:
    """`bench` with only the problems an id or glob of `patterns` matches; InputError for a
    pattern that matches none (a typo would silently shrink the benchmark)."""
    ids = [p.id for p in bench.problems]
    patterns = [_case_file(pat, ids) for pat in patterns]
    skipped_ids = {s.path for s in bench.skipped}
    unmatched = [pat for pat in patterns if not fnmatch.filter(ids, pat) and pat not in skipped_ids]
    if unmatched:
        raise InputError(
            f"--only: {', '.join(map(repr, unmatched[:5]))} matches no problem of "
            f"{bench.source} ({len(ids)} problems, e.g. {', '.join(ids[:3])})"
        )
    keep = {pid for pat in patterns for pid in fnmatch.filter(ids, pat)}
    return Benchmark(
        bench.name,
        [p for p in bench.problems if p.id in keep],
        [a for a in bench.answers if a.problem_id in keep],
        bench.source,
        [s for s in bench.skipped if any(fnmatch.fnmatchcase(s.path, pat) for pat in patterns)],
        frozenset(ids) - keep,
    )


def _case_file(pattern: str, ids: list[str]) -> str:
    """A Rocq case named by its file, as case lists name them (`a/b.v`, NTP4VC's
    test_set.rocq.lst), is the problem `a/b`."""
    stem = pattern.removesuffix(".v")
    if stem != pattern and not fnmatch.filter(ids, pattern) and fnmatch.filter(ids, stem):
        return stem
    return pattern


SHOWN_SKIPPED = 5


def skipped_summary(bench: Benchmark) -> str | None:
    """One line for the cases that did not load, naming a few with their reasons."""
    if not bench.skipped:
        return None
    shown = "; ".join(f"{s.path}: {s.reason}" for s in bench.skipped[:SHOWN_SKIPPED])
    more = "; ..." if len(bench.skipped) > SHOWN_SKIPPED else ""
    count = len(bench.skipped)
    return f"skipped {count} case{'s' * (count != 1)} that do not load ({shown}{more})"
