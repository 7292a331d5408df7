"""Per-problem time limits, resolved as s2n-bignum-bench does.

The per-problem map (timeout-map.json: a JSON list of {"problem_id", "timeout_sec"}, other
keys such as "prove_secs" ignored) wins, then the problem's own timeout field, then the
per-category limit (timeouts.json: {category: seconds}), then the default: `--timeout`
for the commands, a call's `timeout` (else the Checker's) for the API and the service.
Everywhere the default is DEFAULT_TIMEOUT unless given.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from proofeval.errors import InputError, read_text
from proofeval.model import Problem

DEFAULT_TIMEOUT = 120.0  # seconds per attempt when nothing else names a limit
MAP_NAME = "timeout-map.json"
CATEGORIES_NAME = "timeouts.json"


@dataclass(frozen=True)
class TimeoutPolicy:
    per_problem: dict[str, float] = field(default_factory=dict)
    per_category: dict[str, float] = field(default_factory=dict)
    default: float = DEFAULT_TIMEOUT

    def for_problem(self, problem: Problem) -> float:
        """Seconds allowed for each attempt at `problem`."""
        if problem.id in self.per_problem:
            return self.per_problem[problem.id]
        if problem.timeout is not None:
            return problem.timeout
        return self.per_category.get(problem.category, self.default)


def policy_files(
    benchmark_source: Path, timeout_map: Path | None, timeouts: Path | None
) -> tuple[Path | None, Path | None]:
    """The per-problem and per-category files a policy is read from: those given, else
    those of their names beside the problems where they exist."""
    beside = benchmark_source if benchmark_source.is_dir() else benchmark_source.parent
    found = [
        given or (implicit if implicit.is_file() else None)
        for given, implicit in (
            (timeout_map, beside / MAP_NAME),
            (timeouts, beside / CATEGORIES_NAME),
        )
    ]
    return found[0], found[1]


def load_policy(
    benchmark_source: Path, timeout_map: Path | None, timeouts: Path | None, default: float
) -> TimeoutPolicy:
    """The policy from the given files, or from the files of those names beside the problems."""
    map_file, categories_file = policy_files(benchmark_source, timeout_map, timeouts)
    map_json = _load(map_file)
    categories_json = _load(categories_file)
    per_problem = {} if map_json is None else _per_problem(map_json)
    per_category = {} if categories_json is None else _per_category(categories_json)
    return TimeoutPolicy(per_problem, per_category, default)


def _load(path: Path | None) -> tuple[Path, object] | None:
    """(path, parsed JSON) of the file, if there is one."""
    if path is None:
        return None
    try:
        return path, json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None


def _per_problem(loaded: tuple[Path, object]) -> dict[str, float]:
    path, entries = loaded
    if not isinstance(entries, list):
        raise InputError(f"{path}: expected a JSON list of {{problem_id, timeout_sec}} objects")
    limits = {}
    for number, entry in enumerate(entries, start=1):
        where = f"{path}: entry {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("problem_id"), str):
            raise InputError(f"{where}: expected an object with a problem_id string")
        limits[entry["problem_id"]] = _seconds(where, entry.get("timeout_sec"))
    return limits


def _per_category(loaded: tuple[Path, object]) -> dict[str, float]:
    path, limits = loaded
    if not isinstance(limits, dict):
        raise InputError(f"{path}: expected a JSON object {{category: seconds}}")
    return {category: _seconds(f"{path}: {category}", value) for category, value in limits.items()}


def is_seconds(value: object) -> TypeGuard[float]:
    """Whether a parsed JSON value is a usable time limit: a finite positive number."""
    # bool is an int in Python; `true` is not a number of seconds. JSON may hold NaN.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value > 0


def _seconds(where: str, value: object) -> float:
    if not is_seconds(value):
        raise InputError(f"{where}: timeout must be a positive number of seconds, not {value!r}")
    return float(value)
