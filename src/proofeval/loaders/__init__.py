"""Benchmark loaders: a path given by the user becomes problems (and any shipped answers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.loaders import (
    minif2f_rocq,
    native_jsonl,
    rocq_cases,
    s2n_layout,
    s2n_official,
    why3_vcs,
)
from proofeval.model import Attempt, Problem


@dataclass
class Benchmark:
    name: str
    problems: list[Problem]
    answers: list[Attempt]
    source: Path


def load_benchmark(path: Path) -> Benchmark:
    """A directory in the s2n-bignum-bench layout (an official build with problems.json,
    or <id>/ subdirectories), miniF2F-rocq (a split's directory of .v files, or the
    directory of splits), a Rocq tree with a case manifest (its root, or its cases.txt /
    cases.json), a benchmark of verification conditions `build why3` or `build frama-c`
    wrote, or a .jsonl file of problems."""
    manifest = rocq_cases.manifest_of(path)
    if manifest is not None:
        name = manifest.parent.resolve().name
        return Benchmark(name, rocq_cases.load(manifest, name), [], path)
    if path.is_dir():
        name = path.resolve().name
        if why3_vcs.is_why3_vcs(path):
            return Benchmark(name, why3_vcs.load(path, name), [], path)
        if minif2f_rocq.is_minif2f_rocq(path):
            return Benchmark(name, minif2f_rocq.load(path, name), [], path)
        reader = s2n_official if s2n_official.is_official(path) else s2n_layout
        problems, answers = reader.load(path, name)
        return Benchmark(name, problems, answers, path)
    if not path.exists():
        raise InputError(f"no such file or directory: {path}")
    if path.suffix == ".jsonl":
        return Benchmark(path.stem, native_jsonl.load(path, path.stem), [], path)
    raise InputError(
        f"{path}: not a benchmark: expected a directory of <problem-id>/setup.ml + query.txt "
        "or a .jsonl file of problems"
    )
