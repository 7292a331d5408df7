"""Arms of one run: the same problems asked of another model or under another setting,
in the same RUN_DIR, each with its own identity (runs/manifest.py) and reported beside
the others, never pooled with them.

The default arm (a run without --arm) is RUN_DIR itself, as ever; arm NAME is the run
directory RUN_DIR/arms/NAME, a whole run of its own (store, results.csv, answers.jsonl).
No store changes: a run made before arms existed is a run with one arm.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from proofeval.errors import InputError
from proofeval.store import ARM_NAME, ARMS, DEFAULT_ARM, FILE_NAME, RunStore, named_arms


def arm_dir(run_dir: Path, name: str | None) -> Path:
    """Where arm `name` of the run in `run_dir` lives (None or "default": RUN_DIR)."""
    if name is None or name == DEFAULT_ARM:
        return run_dir
    if not ARM_NAME.fullmatch(name):
        raise InputError(
            f"--arm {name!r}: an arm's name is letters, digits, '.', '_' and '-' (at most "
            "64, starting with a letter or digit)"
        )
    return run_dir / ARMS / name


def every_arm(run_dir: Path) -> list[tuple[str, Path]]:
    """Every arm with a store: the default one (RUN_DIR), then the named ones."""
    default = [(DEFAULT_ARM, run_dir)] if (run_dir / FILE_NAME).is_file() else []
    return default + named_arms(run_dir)


def refuse_other_problems(run_dir: Path, name: str | None, problem_ids: Iterable[str]) -> None:
    """An arm is the run's problems under another setting: refuse one whose problems
    differ from another arm's (InputError naming both counts and a few ids)."""
    mine = arm_dir(run_dir, name)
    wanted = set(problem_ids)
    for other, path in every_arm(run_dir):
        if path == mine:
            continue
        have = _problem_ids(path)
        if have and have != wanted:
            missing, extra = sorted(have - wanted), sorted(wanted - have)
            shown = "; ".join(
                f"{label}: {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}"
                for label, ids in (("not selected now", missing), ("new", extra))
                if ids
            )
            raise InputError(
                f"arm {name or DEFAULT_ARM!r} of {run_dir} would have other problems than arm "
                f"{other!r} ({len(wanted)} against {len(have)}; {shown}): the arms of a run "
                "are the same problems; give the same benchmark, --only and --limit"
            )


def _problem_ids(path: Path) -> set[str]:
    store = RunStore(path)
    try:
        return {p.id for p in store.problems()}
    finally:
        store.close()
