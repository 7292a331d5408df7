"""Shared loading of contexts against loading each problem's context separately, in one run.

Builds a benchmark with `proofeval build hol-light` (by default from sources Debian ships in
/usr/share/hol-light), then, on one warm sandboxed HOL Light core, measures:
1. the cold core load (start the sandbox, load hol.ml; measured once);
2. shared: `proofeval check BENCH --reference` on the warm core: each node of the context
   tree loaded once, into a fork of the process that loaded its parent (measured);
3. naive: each problem alone, as `proofeval check` of that one problem: a fork of the
   core loads the problem's whole <id>/setup.ml, then its reference is checked (measured);
4. naive with a cold core per problem, as a pipeline that compiles every problem from
   scratch: 3 + problems x 1 (computed from the measured parts, CPU only).

CPU seconds are user+sys of every process involved: this Python process (and any child it
reaped) and the whole bubblewrap sandbox, read from /proc/<pid>/stat as utime+stime+cutime+
cstime summed over the sandbox's process tree. A process that has exited is counted in its
reaper's cutime/cstime (bubblewrap's init reaps the forked HOL Light processes, which reap
their attempts), so the sum covers every fork that ever ran; phases are measured as
differences once their processes have exited. Wall times are printed too; quote CPU when
another HOL Light shares the machine.

Usage: python benchmarks/shared_loading.py [SOURCE ...] [--root DIR] [--workers 2]
                                          [--naive-sample K] [--keep DIR]
Takes about 8 minutes on 2 cores with the default sources.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from proofeval.builders.hol_light import BuildOptions, build
from proofeval.errors import read_text
from proofeval.loaders import load_benchmark
from proofeval.model import Attempt, Outcome, Problem
from proofeval.provers.hol_light import contexts
from proofeval.provers.hol_light.pool import HolLightChecker
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher, WarmProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.runs.check import CheckOptions, run_check

# Each file is a chain of 2 to 300 problems (its `needs` inlined, so two_squares.ml's chain
# starts with Library/prime.ml's 274 theorems; perfect.ml's contexts all load prime.ml).
DEFAULT_SOURCES = (
    "Library/integer.ml",
    "Library/permutations.ml",
    "Library/rstc.ml",
    "Library/floor.ml",
    "100/ramsey.ml",
    "100/combinations.ml",
    "100/ballot.ml",
    "100/arithmetic.ml",
    "100/two_squares.ml",
    "100/perfect.ml",
)
TICK = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    cpu: float  # user+sys seconds
    wall: float

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu - other.cpu, self.wall - other.wall)


def proc_children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = proc_stat(int(name))
            if fields:
                kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # exited meanwhile
        return []
    return text[text.rfind(")") + 2 :].split()


def tree_pids(root: int) -> list[int]:
    kids, found, todo = proc_children(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(kids.get(pid, []))
    return found


def tree_cpu(root: int) -> float:
    """utime+stime+cutime+cstime of `root` and every live descendant, in seconds."""
    ticks = 0
    for pid in tree_pids(root):
        fields = proc_stat(pid)
        ticks += sum(int(x) for x in fields[11:15]) if fields else 0
    return ticks / TICK


class Meter:
    """CPU of this process, its reaped children and the sandbox tree; wall time."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher

    def sandbox_root(self) -> int | None:
        proc = self.launcher._proc  # the bwrap process Launcher.start spawned
        return None if proc is None else proc.pid

    def now(self) -> Usage:
        own = resource.getrusage(resource.RUSAGE_SELF)
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
        root = self.sandbox_root()
        cpu += 0.0 if root is None else tree_cpu(root)
        return Usage(cpu, time.perf_counter())

    def settle(self, before: set[int], limit: float = 60.0) -> None:
        """Wait until the processes a phase started have exited (and been reaped)."""
        root = self.sandbox_root()
        deadline = time.monotonic() + limit
        while root is not None and time.monotonic() < deadline:
            if set(tree_pids(root)) <= before:
                return
            time.sleep(0.2)
        print("warning: some sandboxed processes outlived their phase", file=sys.stderr)

    def measure(self, work: Callable[[], T]) -> tuple[T, Usage]:
        root = self.sandbox_root()
        before = set(tree_pids(root)) if root is not None else set()
        start = self.now()
        result = work()
        if before:  # the sandbox ran before: wait for what this phase started to exit
            self.settle(before)
        return result, self.now() - start


def build_bench(base: WarmProcess, args: argparse.Namespace, out: Path) -> int:
    sources = tuple(s if s.is_absolute() else args.root / s for s in args.sources)
    opts = BuildOptions(sources, out, args.root, hol_dir=args.hol_light, preludes=args.prelude)
    return len(build(opts, base).problems)


@dataclass(frozen=True)
class Checked:
    verdicts: Counter
    attempt_seconds: float  # wall time inside the attempt forks, summed: the proofs

    def note(self) -> str:
        counts = ", ".join(f"{v} {n}" for v, n in sorted(self.verdicts.items()))
        return f"{counts}; proofs {self.attempt_seconds:.1f} s"


def check_shared(base: WarmProcess, bench: Path, run: Path, workers: int) -> Checked:
    """`proofeval check BENCH --reference --workers N` on the warm core."""
    opts = CheckOptions(bench, run, reference=True, settings=CheckSettings(workers=workers))
    rows = run_check(opts, {"hol-light": base})
    counts = Counter(r.verdict.value if r.verdict else "unchecked" for r in rows)
    return Checked(counts, sum(r.seconds or 0.0 for r in rows))


def with_setup_file(bench: Path, problem: Problem) -> Problem:
    """The problem with its context read from <id>/setup.ml, the file a per-problem
    pipeline loads (the shared check cuts the same text from ml_files/)."""
    return dataclasses.replace(problem, header=read_text(bench / problem.id / "setup.ml"))


def check_alone(base: WarmProcess, problem: Problem) -> Outcome:
    """`proofeval check` of one problem on the warm core: fork, load, check."""
    assert problem.reference is not None
    got: list[Outcome] = []
    job = Job(Attempt(problem.id, 0, problem.reference, problem.reference), problem, 3600.0)
    HolLightChecker(CheckSettings(workers=1), lambda _a, o: got.append(o), base=base).run([job])
    return got[0]


def check_naive(base: WarmProcess, problems: list[Problem], workers: int) -> Checked:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(lambda p: check_alone(base, p), problems))
    counts = Counter(o.verdict.value for o in outcomes)
    return Checked(counts, sum(o.seconds for o in outcomes))


def sample(problems: list[Problem], size: int) -> list[Problem]:
    """All problems, or `size` of them at evenly spaced quantiles of context length (the
    midpoints of `size` equal slices), so their mean estimates the mean of all."""
    if size <= 0 or size >= len(problems):
        return problems
    by_length = sorted(problems, key=lambda p: len(p.header))
    return [by_length[(2 * i + 1) * len(problems) // (2 * size)] for i in range(size)]


def text_loaded(problems: list[Problem]) -> tuple[int, int, int]:
    """Characters of context loaded the shared way (and how many loads), and naively."""
    nodes = {id(n): n for n in contexts.build(problems).values()}
    for node in list(nodes.values()):
        while node.parent is not None:
            node = node.parent
            nodes[id(node)] = node
    shared = [len(n.remainder()) for n in nodes.values() if n.remainder().strip()]
    return sum(shared), len(shared), sum(len(p.header) for p in problems)


@dataclass(frozen=True)
class Results:
    problems: int
    naive_problems: int  # measured the naive way (all, or a sample)
    core: Usage
    built: Usage
    shared: Usage
    naive: Usage
    shared_checked: Checked
    naive_checked: Checked


def row(label: str, cpu: float, wall: float | None = None, note: str = "") -> str:
    wall_text = f"{'-':>9}" if wall is None else f"{wall:9.1f}"
    return f"{label:<56}{cpu:9.1f}{wall_text}   {note}"


def naive_rows(r: Results) -> tuple[list[str], float]:
    """The naive rows, and the naive CPU for all problems (measured or extrapolated)."""
    n, k = r.problems, r.naive_problems
    note = r.naive_checked.note()
    if k == n:
        label = "naive: each setup.ml on the warm core (measured)"
        return [row(label, r.naive.cpu, r.naive.wall, note)], r.naive.cpu
    everything = r.naive.cpu * n / k
    return [
        row(f"naive: {k} problems' setup.ml, a sample (measured)", r.naive.cpu, r.naive.wall, note),
        row(f"naive: all {n} (computed: {n}/{k} x the sample)", everything),
    ], everything


def ratio(label: str, value: float) -> str:
    return f"{label + ':':<56}{value:9.1f}x CPU"


def report(r: Results) -> None:
    n = r.problems
    lines, naive = naive_rows(r)
    cold = naive + n * r.core.cpu
    print(f"{'':<56}{'CPU s':>9}{'wall s':>9}")
    print(row("cold core load (measured, once)", r.core.cpu, r.core.wall))
    print(row("build the benchmark (measured, in neither way)", r.built.cpu, r.built.wall))
    label = "shared: proofeval check --reference (measured)"
    print(row(label, r.shared.cpu, r.shared.wall, r.shared_checked.note()))
    print("\n".join(lines))
    print(row(f"naive + cold core per problem (computed: + {n} x core)", cold))
    print()
    measured = r.naive_problems == n
    wall = f"  {r.naive.wall / r.shared.wall:.1f}x wall" if measured else "  (computed)"
    print(ratio("naive / shared, both on the warm core", naive / r.shared.cpu) + wall)
    proofs = (
        r.shared_checked.attempt_seconds,
        r.naive_checked.attempt_seconds * n / r.naive_problems,
    )
    rest = (naive - proofs[1]) / (r.shared.cpu - proofs[0])
    print(ratio("the same, less the proofs' time", rest) + "  (computed, approximate)")
    whole = cold / (r.core.cpu + r.shared.cpu)
    print(ratio("naive, cold core each / (core once + shared)", whole) + "  (computed)")
    print(
        f"per problem, CPU: shared {r.shared.cpu / n:.3f} s, naive {naive / n:.3f} s; "
        f"core load {r.core.cpu:.1f} s"
    )


def warn_if_setup_differs(bench: Path, problems: list[Problem]) -> None:
    differ = sum(with_setup_file(bench, p).header != p.header for p in problems)
    if differ:
        print(f"warning: {differ} contexts cut from ml_files/ differ from their <id>/setup.ml")


def measure_all(args: argparse.Namespace, workdir: Path) -> tuple[Results, list[Problem]]:
    launcher = Launcher(args.hol_light)
    meter = Meter(launcher)
    bench = workdir / "bench"
    try:
        base, core = meter.measure(launcher.start)
        n, built = meter.measure(lambda: build_bench(base, args, bench))
        problems = load_benchmark(bench).problems
        alone = [with_setup_file(bench, p) for p in sample(problems, args.naive_sample)]
        warn_if_setup_differs(bench, problems)
        shutil.rmtree(workdir / "run", ignore_errors=True)  # a kept run would resume
        shared_checked, shared = meter.measure(
            lambda: check_shared(base, bench, workdir / "run", args.workers)
        )
        naive_checked, naive = meter.measure(lambda: check_naive(base, alone, args.workers))
    finally:
        launcher.close()
    results = Results(n, len(alone), core, built, shared, naive, shared_checked, naive_checked)
    return results, problems


def run(args: argparse.Namespace, workdir: Path) -> None:
    results, problems = measure_all(args, workdir)
    chars, loads, naive_chars = text_loaded(problems)
    print(
        f"{results.problems} problems from {len(args.sources)} sources; {args.workers} workers; "
        f"{os.cpu_count()} CPUs"
    )
    print(
        f"context text loaded: shared {chars / 1e6:.2f} MB in {loads} loads, "
        f"naive {naive_chars / 1e6:.2f} MB in {results.problems} loads"
    )
    report(results)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sources",
        nargs="*",
        type=Path,
        default=[Path(s) for s in DEFAULT_SOURCES],
        metavar="SOURCE",
        help="HOL Light source files to build the benchmark from (relative ones under "
        "--root); default: " + " ".join(DEFAULT_SOURCES),
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=DEBIAN_HOL_LIGHT,
        metavar="DIR",
        help="the development's root, as for proofeval build (default %(default)s)",
    )
    parser.add_argument(
        "--prelude",
        action="append",
        default=[],
        metavar="FILE",
        help="a file loaded before each source, as for proofeval build (repeatable)",
    )
    parser.add_argument(
        "--hol-light", type=Path, default=DEBIAN_HOL_LIGHT, metavar="DIR", help="HOL Light"
    )
    parser.add_argument(
        "--workers", type=int, default=2, metavar="N", help="for both ways (default 2)"
    )
    parser.add_argument(
        "--naive-sample",
        type=int,
        default=0,
        metavar="K",
        help="measure the naive way on K problems only (at evenly spaced quantiles of context "
        "length) and extrapolate to all (default: all)",
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build and check here (kept)")
    args = parser.parse_args()
    args.prelude = tuple(args.prelude)
    return args


def main() -> None:
    args = parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        run(args, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="shared-loading-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
