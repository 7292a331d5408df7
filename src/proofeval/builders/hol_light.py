"""Build a benchmark from a verified HOL Light development, as s2n-bignum-bench was built.

Every top-level `let NAME = prove(goal, tactic)` (or `time prove`) of the inlined sources
becomes a problem: the goal is its query, the original tactic its hidden reference, and
its context everything before it in the inlined source, with every earlier proof's
tactic replaced by CHEAT_TAC. So the contexts of one source's problems are prefixes of
one another, and sources that load the same base share a long prefix.

The output is s2n-bignum-bench's layout: problems.json ({id: {category, query, legacy_id,
json, inlined_locations}}), ml_files/<group>/<file>.ml (each inlined source with every
proof CHEAT_TAC'd; an inlined location [file, n] means the context is its first n lines),
<id>/setup.ml, <id>/query.txt, <id>/category.txt; plus references.jsonl (the reference
tactics, never shown to a model) and proofeval-build.json (how it was built).

Ids follow collect-problems.py: `<group>.<file>.<NAME>`, NAME as the source spells it
(primes included: `CANTOR_THM_INJ'` is not `CANTOR_THM_INJ`), with `.N` (from 0) on every
problem of a name that one file binds several times. Every top-level binding is its own
problem; the same binding met again (a file inlined into several sources) is the same
problem at one more location. A binding whose goal an earlier problem already states (same
text up to white space) stays its own problem and is reported as such; collect-problems.py
merges it into the earlier one, as `merge_same_goal` does. The build's summary counts what
was merged and dropped, and why.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from proofeval.builders.categories import OFFICIAL_RULES, Rule, categorize, rules_json
from proofeval.errors import InputError
from proofeval.loaders.s2n_official import BUILD_INFO, PROBLEMS, REFERENCES
from proofeval.provers.backend import SharedProcess
from proofeval.provers.hol_light.backend import core
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, WarmProcess, quoted_term
from proofeval.provers.hol_light.sources import (
    Inlined,
    Inliner,
    LoadPath,
    Theorem,
    core_file_ids,
    encode,
)

ML_FILES = "ml_files"
CHEAT = "CHEAT_TAC"


@dataclass(frozen=True)
class BuildOptions:
    sources: tuple[Path, ...]
    out: Path
    root: Path
    hol_dir: Path = DEBIAN_HOL_LIGHT
    rules: tuple[Rule, ...] = OFFICIAL_RULES
    # Files loaded before each source, relative to the root; "{group}" stands for the
    # source's group: ("{group}/proofs/base.ml",) is s2n-bignum's build.
    preludes: tuple[str, ...] = ()
    # <id>/setup.ml repeats a prefix of an ml file: a large development's contexts take
    # gigabytes that way; problems.json's inlined_locations suffice to read the benchmark.
    setup_files: bool = True
    # As collect-problems.py: a binding whose goal (up to white space) an earlier problem
    # states is merged into that problem, as one more location, instead of being its own.
    merge_same_goal: bool = False


@dataclass(frozen=True)
class Occurrence:
    """One theorem met in one inlined source, and where its context ends. Only text is
    kept (not the inlined source): a large development has hundreds of sources."""

    name: str
    file: Path  # where the theorem is written
    line: int
    offset: int  # where its phrase starts in `file` (bytes): with it, the binding's identity
    query: str
    reference: str
    trace: dict  # s2n-bignum-bench's "json" field
    ml_file: str  # the CHEAT_TAC'd source, relative to the benchmark
    cut: int  # the context is that file's text up to here...
    lines: int  # ...which is its first `lines` lines

    @staticmethod
    def of(th: Theorem, inlined: Inlined, ml_file: str, cut: int, lines: int) -> Occurrence:
        text = inlined.text
        return Occurrence(
            name=th.name,
            file=th.file,
            line=th.line,
            offset=th.offset,
            query=text[th.goal[0] : th.goal[1]],
            reference=text[th.tactic[0] : th.tactic[1]],
            trace=tactictrace_json(th, inlined),
            ml_file=ml_file,
            cut=cut,
            lines=lines,
        )


@dataclass
class BuiltProblem:
    base_id: str
    legacy_id: str  # s2n-bignum-bench's older id: <group>.<file>.<line>.<NAME>
    group: str
    category: str | None  # None: dropped
    reason: str
    first: Occurrence
    locations: list[Occurrence] = field(default_factory=list)
    id: str = ""
    same_goal_as: BuiltProblem | None = None  # an earlier problem stating the same goal


# Why a theorem met in the sources is not a problem of its own.
MET_AGAIN = "the same theorem met again through another source (one more location)"
SAME_GOAL = "the goal of an earlier problem (--merge-same-goal)"


@dataclass(frozen=True)
class Merged:
    """A theorem met in a source that became one more location of a problem."""

    occurrence: Occurrence
    into: BuiltProblem
    reason: str


@dataclass
class BuildReport:
    problems: list[BuiltProblem]  # kept, in the order first met
    dropped: list[BuiltProblem]
    sources: list[Path]
    merged: list[Merged] = field(default_factory=list)

    def categories(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for p in self.problems:
            counts[p.category or ""] += 1
        return dict(sorted(counts.items()))

    def same_goal(self) -> list[BuiltProblem]:
        """Kept problems whose goal an earlier problem already states."""
        return [p for p in self.problems if p.same_goal_as is not None]

    def summary(self) -> str:
        """One line: what was kept, dropped and merged, with the reasons."""
        counts = ", ".join(f"{c} {n}" for c, n in self.categories().items())
        n, k = len(self.sources), len(self.problems)
        parts = [f"{k} problem{'s' * (k != 1)} ({counts}) from {n} source{'s' * (n != 1)}"]
        for what, reasons in (
            ("dropped", [p.reason for p in self.dropped]),
            ("merged", [m.reason for m in self.merged]),
        ):
            why = "; ".join(f"{k}: {r}" for r, k in Counter(reasons).most_common())
            parts.append(f"{len(reasons)} {what}" + (f" ({why})" if why else ""))
        return "; ".join(parts)


def expand_sources(sources: tuple[Path, ...]) -> list[Path]:
    """Files as given; a directory stands for the .ml files under it, sorted."""
    found: list[Path] = []
    for s in sources:
        if s.is_dir():
            found.extend(sorted(s.rglob("*.ml")))
        elif s.is_file():
            found.append(s)
        else:
            raise InputError(f"no such file or directory: {s}")
    return list(dict.fromkeys(p.resolve() for p in found))


def _under(path: Path, directory: Path) -> bool:
    return path.is_relative_to(directory)


class Builder:
    def __init__(self, opts: BuildOptions, proc: WarmProcess) -> None:
        self.opts = opts
        self.root = opts.root.resolve()
        self.hol_dir = opts.hol_dir.resolve()
        load_path = LoadPath(self.root, self.hol_dir)
        self.inliner = Inliner(proc.split, load_path, core_file_ids(proc))
        self.ml_files: dict[str, str] = {}  # relative path -> CHEAT_TAC'd text
        self.problems: list[BuiltProblem] = []  # in the order first met
        self.by_binding: dict[tuple[Path, int], BuiltProblem] = {}  # (file, offset)
        self.by_goal: dict[str, BuiltProblem] = {}  # the first problem of each goal
        self.by_base: dict[str, list[BuiltProblem]] = defaultdict(list)
        self.merged: list[Merged] = []

    def group_and_stem(self, path: Path) -> tuple[str, str]:
        parts = path.relative_to(self.root).parts
        return (parts[0] if len(parts) > 1 else self.root.name), path.stem

    def is_problem_file(self, path: Path) -> bool:
        """Theorems of the development, not of the HOL Light it builds on."""
        if not _under(path, self.root):
            return False
        return _under(self.root, self.hol_dir) or not _under(path, self.hol_dir)

    def run(self) -> BuildReport:
        sources = expand_sources(self.opts.sources)
        for source in sources:
            if not _under(source, self.root):
                raise InputError(f"{source} is not under the root {self.root} (give --root)")
            self.add_source(self.inliner.inline(source, self.preludes(source)))
        for base, members in self.by_base.items():
            for i, p in enumerate(members):
                p.id = base if len(members) == 1 else f"{base}.{i}"
        for p in self.problems:
            _check_id(p)
        kept = [p for p in self.problems if p.category is not None]
        dropped = [p for p in self.problems if p.category is None]
        return BuildReport(kept, dropped, sources, self.merged)

    def preludes(self, source: Path) -> tuple[Path, ...]:
        group, _ = self.group_and_stem(source)
        found = []
        for pattern in self.opts.preludes:
            path = self.root / pattern.replace("{group}", group)
            if not path.is_file():
                raise InputError(f"prelude {pattern}: no such file {path} (for {source})")
            if path.resolve() != source:
                found.append(path)
        return tuple(found)

    def ml_path(self, source: Path) -> str:
        group, stem = self.group_and_stem(source)
        path = f"{ML_FILES}/{group}/{stem}.ml"
        if path in self.ml_files:  # two sources of one name in one group
            path = f"{ML_FILES}/" + "/".join(source.relative_to(self.root).parts)
        return path

    def add_source(self, inlined: Inlined) -> None:
        ml_file = self.ml_path(inlined.source)
        text, cuts = cheat_text(inlined)
        self.ml_files[ml_file] = text
        for theorem, cut in zip(inlined.theorems, cuts, strict=True):
            if self.is_problem_file(theorem.file):
                lines = text.count("\n", 0, cut)
                self.add(Occurrence.of(theorem, inlined, ml_file, cut, lines))

    def setup(self, problem: BuiltProblem) -> str:
        return self.ml_files[problem.first.ml_file][: problem.first.cut]

    def add(self, occ: Occurrence) -> None:
        binding = (occ.file, occ.offset)
        if binding in self.by_binding:
            self._merge(occ, self.by_binding[binding], MET_AGAIN)
            return
        key = " ".join(occ.query.split())
        earlier = self.by_goal.get(key)
        if earlier is not None and self.opts.merge_same_goal:
            self.by_binding[binding] = earlier
            self._merge(occ, earlier, SAME_GOAL)
            return
        group, stem = self.group_and_stem(occ.file)
        name = occ.name
        if quoted_term(occ.query) is None:  # code that makes the goal: HOL Light refuses it
            category, reason = None, "the goal is evaluated at runtime"
        else:
            decision = categorize(self.opts.rules, name, occ.query, group)
            category, reason = decision.category, decision.reason
        problem = BuiltProblem(
            base_id=f"{group}.{stem}.{name}",
            legacy_id=f"{group}.{stem}.{occ.line}.{name}",
            group=group,
            category=category,
            reason=reason,
            first=occ,
            same_goal_as=earlier,
        )
        problem.locations.append(occ)
        self.problems.append(problem)
        self.by_binding[binding] = problem
        self.by_goal.setdefault(key, problem)
        self.by_base[problem.base_id].append(problem)

    def _merge(self, occ: Occurrence, into: BuiltProblem, reason: str) -> None:
        into.locations.append(occ)
        self.merged.append(Merged(occ, into, reason))


def _check_id(problem: BuiltProblem) -> None:
    """An id names its problem's directory: it must be one plain path component (a group
    and a file stem are; an OCaml name is letters, digits, '_' and primes)."""
    pid = problem.id
    if "/" in pid or "\0" in pid or pid in (".", ".."):
        where = f"{problem.first.file}:{problem.first.line}"
        raise InputError(f"{where}: problem id {pid!r} cannot name a directory")


def cheat_text(inlined: Inlined) -> tuple[str, list[int]]:
    """The inlined text with every proof's tactic replaced by CHEAT_TAC, each theorem
    starting a line; and the offset of each theorem's line in it."""
    parts: list[str] = []
    cuts: list[int] = []
    length, cursor, text = 0, 0, inlined.text
    tail = ""  # the output's last, unfinished line
    for th in inlined.theorems:
        before = text[cursor : th.span[0]]
        line = before[before.rfind("\n") + 1 :] if "\n" in before else tail + before
        if line.strip():
            before, line = before + "\n", ""
        cuts.append(length + len(before) - len(line))
        piece = before + text[th.span[0] : th.tactic[0]] + CHEAT + text[th.tactic[1] : th.span[1]]
        parts.append(piece)
        length += len(piece)
        tail = piece[piece.rfind("\n") + 1 :] if "\n" in piece else tail + piece
        cursor = th.span[1]
    parts.append(text[cursor:])
    return "".join(parts), cuts


def tactictrace_json(th: Theorem, inl: Inlined) -> dict:
    """Where the theorem is in its own source file, as s2n-bignum-bench's "json" field
    records it (TacticTrace's fields: lines from 1, columns from 0)."""

    def line_col(offset: int) -> tuple[str, str]:
        _, line = inl.location(offset)
        return str(line), str(offset - (inl.text.rfind("\n", 0, offset) + 1))

    gl0, gc0 = line_col(th.goal[0])
    gl1, gc1 = line_col(th.goal[1])
    pl0, pc0 = line_col(th.tactic[0])
    pl1, pc1 = line_col(th.tactic[1])
    return {
        "theorem_name": th.name,
        "filename": str(th.file),
        "toplevel_theorem_linenum_start": th.line,
        "goal_linenum_start": gl0,
        "goal_colnum_start": gc0,
        "goal_linenum_end": gl1,
        "goal_colnum_end": gc1,
        "proof_linenum_start": pl0,
        "proof_colnum_start": pc0,
        "proof_linenum_end": pl1,
        "proof_colnum_end": pc1,
    }


def problems_json(report: BuildReport) -> dict[str, dict]:
    out = {}
    for p in report.problems:
        out[p.id] = {
            "json": p.first.trace,
            "category": p.category,
            "query": p.first.query,
            "legacy_id": p.legacy_id,
            "inlined_locations": [[o.ml_file, o.lines] for o in p.locations],
        }
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(text))


def write_benchmark(builder: Builder, report: BuildReport, out: Path) -> None:
    """Write the benchmark into a fresh directory, then put it in place of `out`."""
    if out.exists() and any(out.iterdir()) and not (out / BUILD_INFO).exists():
        raise InputError(f"{out} exists and is not a benchmark built by proofeval: not replacing")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        _write_into(builder, report, staging)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _problem_directory(out: Path, pid: str, made: list[str]) -> None:
    """Make out/<pid>, which must be new: ids differ, but a file system that does not tell
    some names apart (case-insensitive ones: `foo` and `FOO`) would merge two problems."""
    try:
        (out / pid).mkdir()
    except FileExistsError:
        same = [q for q in made if os.path.samefile(out / q, out / pid)]
        raise InputError(
            f"problem ids {pid!r} and {(same or ['another'])[0]!r} name the same directory on "
            f"the file system of {out.parent}, which does not tell them apart: build on one "
            "that does (names differing in case or primes must stay apart)"
        ) from None
    made.append(pid)


def _write_into(builder: Builder, report: BuildReport, out: Path) -> None:
    for rel, text in builder.ml_files.items():
        _write(out / rel, text)
    made: list[str] = []
    for p in report.problems:
        _problem_directory(out, p.id, made)
        if builder.opts.setup_files:
            _write(out / p.id / "setup.ml", builder.setup(p))
        _write(out / p.id / "query.txt", p.first.query + "\n")
        _write(out / p.id / "category.txt", f"{p.category}\n")
    _write(out / PROBLEMS, json.dumps(problems_json(report), indent=2) + "\n")
    refs = [json.dumps({"problem_id": p.id, "answer": p.first.reference}) for p in report.problems]
    _write(out / REFERENCES, "".join(r + "\n" for r in refs))
    info = {
        "root": str(builder.root),
        "hol_light": str(builder.hol_dir),
        "sources": [str(s) for s in report.sources],
        "preludes": list(builder.opts.preludes),
        "categories": rules_json(builder.opts.rules),
        "merge_same_goal": builder.opts.merge_same_goal,
        "dropped": [
            {"problem_id": p.id, "reason": p.reason, "query": p.first.query} for p in report.dropped
        ],
        # Theorems that are not problems of their own; each is also one of its problem's
        # inlined_locations. The same theorem met again is only counted (a development's
        # base, inlined before each of its sources, repeats every theorem of the base).
        "met_again": sum(m.reason == MET_AGAIN for m in report.merged),
        "merged": [
            {
                "name": m.occurrence.name,
                "file": str(m.occurrence.file),
                "line": m.occurrence.line,
                "into": m.into.id,
                "reason": m.reason,
            }
            for m in report.merged
            if m.reason != MET_AGAIN
        ],
        "same_goal": [
            {"problem_id": p.id, "same_goal_as": p.same_goal_as.id}
            for p in report.problems
            if p.same_goal_as is not None
        ],
    }
    _write(out / BUILD_INFO, json.dumps(info, indent=2) + "\n")


def build(opts: BuildOptions, shared: SharedProcess) -> BuildReport:
    """Build the benchmark into opts.out; `shared` is HOL Light's shared process (the core
    suffices: it only parses)."""
    proc = core(shared)
    assert proc is not None
    builder = Builder(opts, proc)
    report = builder.run()
    if not report.problems:
        raise InputError("no top-level `let NAME = prove(goal, tactic)` found in the sources")
    write_benchmark(builder, report, opts.out)
    return report
