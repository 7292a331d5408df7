"""Verification-condition benchmarks from WhyML programs, as NTP4VC builds them: every VC
Why3 generates becomes a Coq problem printed by Why3's own Coq driver.

`build` runs Why3 (through why3_tool.ml) on each source and writes BENCH:
  why3-vcs.json   the manifest: each problem's id, category, file, source, module, goal,
                  what --complicate erased; the sources skipped and why
  _CoqProject     `-R <Why3's Coq library> Why3`, the library the headers `Require`
  vcs/<file>/<module>__<goal>.v
                  the printed VC: the theory's context, `Theorem <goal> : ... .`, and
                  `Admitted.` (so the file compiles as it is with coqc)

A problem's statement is the printed `Theorem` verbatim and its header all that Why3
printed before it, so the problems whose context Why3 prints the same (the VCs of one
module's functions after its last lemma) share one header, which the Coq checker loads
once. Ids are `<file>.<module>.<goal>` (`.<n>` added per part with --split goal, and
`.<k>` to the k-th repetition of a goal name, which clones make); the
category is the source's directory name, or what a user's map gives.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from proofeval.builders import why3_tool
from proofeval.builders.complicate import complicate
from proofeval.errors import InputError, read_text
from proofeval.files import write_text_atomically
from proofeval.loaders.why3_vcs import FORMAT, MANIFEST, VC_DIR, split_vc

MAX_VC_BYTES = 4 << 20  # a source with a larger VC (Why3 can print gigabytes) is skipped


@dataclass
class Built:
    """What a build made: the problems (manifest entries) and the sources left out."""

    problems: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)


def sources_of(paths: list[Path], suffix: str) -> list[Path]:
    """The files named, and those under the directories named (sorted), with `suffix`."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())
        elif path.is_file():
            if path.suffix != suffix:
                raise InputError(f"{path}: expected a {suffix} file or a directory of them")
            found.append(path)
        else:
            raise InputError(f"no such file or directory: {path}")
    if not found:
        raise InputError(f"no {suffix} files in {', '.join(map(str, paths))}")
    return found


def load_category_map(path: Path | None) -> dict[str, str]:
    """A JSON object from a source's name, path or glob pattern to its category."""
    if path is None:
        return {}
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in data.items()
    ):
        raise InputError(f"{path}: expected a JSON object of pattern -> category strings")
    return data


def category_of(source: Path, categories: dict[str, str]) -> str:
    """The first pattern of the map matching the source's path or name; else its
    directory's name."""
    for pattern, category in categories.items():
        if fnmatch.fnmatch(str(source), pattern) or fnmatch.fnmatch(source.name, pattern):
            return category
    return source.resolve().parent.name or "uncategorized"


def build(
    sources: list[Path],
    out: Path,
    categories: dict[str, str],
    split_goals: bool = False,
    complicated: bool = False,
) -> Built:
    """Write the benchmark of `sources` (.mlw files) into `out`."""
    library = why3_tool.coq_library()
    files = sources_of(sources, ".mlw")
    built = Built()
    seen: dict[str, Path] = {}
    for source in tqdm(files, desc="why3 VCs", unit="file", disable=len(files) < 2):
        try:
            problems = _source_problems(source, categories, split_goals, complicated)
        except InputError as exc:
            built.skipped.append({"source": str(source), "why": str(exc)})
            continue
        clash = next((p["id"] for p in problems if p["id"] in seen), None)
        if clash is not None:
            why = f"{seen[clash]} gives the same id {clash} (build them separately)"
            built.skipped.append({"source": str(source), "why": why})
            continue
        seen |= {p["id"]: source for p in problems}
        built.problems += problems
    if not built.problems:
        why = "; ".join(s["why"] for s in built.skipped[:3])
        raise InputError(f"no verification conditions from {len(files)} sources: {why}")
    write(out, built, library, split_goals, complicated)
    return built


@contextmanager
def readable_source(source: Path, complicated: bool) -> Iterator[tuple[Path, dict]]:
    """The file Why3 reads for `source` (with --complicate, the source as complicated, in a
    scratch directory under the same name, so ids stay the same), and what was erased."""
    if not complicated:
        read_text(source)  # a clear error for an unreadable file
        yield source, {}
        return
    text, erased = complicate(source, read_text(source))
    with tempfile.TemporaryDirectory(prefix="proofeval-why3-") as scratch:
        path = Path(scratch) / source.name
        path.write_text(text)
        yield path, erased


def problem_id(source: Path, goal: why3_tool.Goal, split_goals: bool) -> str:
    pid = f"{source.stem}.{goal.module}.{goal.goal}"
    return f"{pid}.{goal.index}" if split_goals else pid


def _source_problems(
    source: Path, categories: dict[str, str], split_goals: bool, complicated: bool
) -> list[dict]:
    category = category_of(source, categories)
    problems = []
    ids: dict[str, int] = {}
    with readable_source(source, complicated) as (path, erased):
        with tempfile.TemporaryDirectory(prefix="proofeval-why3-") as scratch:
            for goal in why3_tool.print_coq(path, Path(scratch), split_goals, source.parent):
                file = Path(scratch) / f"{goal.number}.v"
                if file.stat().st_size > MAX_VC_BYTES:
                    raise InputError(
                        f"{source}: the VC {goal.module}.{goal.goal} is "
                        f"{file.stat().st_size >> 20} MB as Coq (over {MAX_VC_BYTES >> 20} MB)"
                    )
                printed = file.read_text()
                pid = problem_id(source, goal, split_goals)
                ids[pid] = ids.get(pid, -1) + 1  # a clone can state a goal name again
                entry = {
                    "id": f"{pid}.{ids[pid]}" if ids[pid] else pid,
                    "number": goal.number,
                    "category": category,
                    "source": str(source),
                    "module": goal.module,
                    "goal": goal.goal,
                    "index": goal.index,
                    "text": admitted(printed, source),
                }
                if complicated:
                    entry["erased"] = erased_for(goal.module, goal.goal, erased)
                problems.append(entry)
    return problems


def erased_for(module: str, goal: str, erased: dict[str, list[str]]) -> list[str]:
    """What was erased that this VC no longer has: in its function (the goal `f'vc` of
    `let f`), and the module's erased lemmas."""
    function = goal.removesuffix("'vc")
    return [*erased.get(f"{module}.{function}", []), *erased.get(f"{module}.", [])]


def admitted(printed: str, source: Path) -> str:
    """The printed VC with its proof replaced by `Admitted.`: header, goal, Admitted."""
    header, statement = split_vc(printed, source)
    return f"{header}{statement}\nAdmitted.\n"


def vc_file(problem: dict) -> str:
    """Where a problem's .v goes: vcs/<file>/<module>__<goal>[__<n>].v, a name coqc takes as
    a module name (letters, digits, _ and ')."""
    source, rest = problem["id"].split(".", 1)
    name = re.sub(r"[^A-Za-z0-9_']", "_", rest.replace(".", "__"))
    return f"{VC_DIR}/{source}/{name}.v"


def write(
    out: Path,
    built: Built,
    library: Path,
    split_goals: bool,
    complicated: bool,
    generator: str = "why3",
) -> None:
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise InputError(f"{out}: exists and is not a why3 benchmark: give a new --out")
    shutil.rmtree(out / VC_DIR, ignore_errors=True)  # a rebuild keeps no stale VC
    (out / VC_DIR).mkdir(parents=True)
    entries = []
    for problem in built.problems:
        file = vc_file(problem)
        write_text_atomically(out / file, problem["text"])
        entries.append({k: v for k, v in problem.items() if k != "text"} | {"file": file})
    write_text_atomically(out / "_CoqProject", f"-R {library} Why3\n")
    manifest = {
        "format": FORMAT,
        "generator": generator,
        "granularity": "goal" if split_goals else "function",
        "complicated": complicated,
        "problems": entries,
        "skipped": built.skipped,
    }
    write_text_atomically(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
