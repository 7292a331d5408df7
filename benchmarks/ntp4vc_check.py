"""NTP4VC's Rocq cases as published: how many type-check, the library build with an empty
cache against a second run (build once), and the checker's time per case against coqc
alone on the same case files (the naive way), in one run:

    .venv/bin/python benchmarks/ntp4vc_check.py NTP4VC_ROOT [--coq debian13] [--only GLOB]
        [--sample 40]

The first run checks every case; the second run and the comparison take `--sample` of
the cases that type-check, spread over the list.

A case type-checks when its statement loads after its header: each case gets one answer
that cannot prove it (`exact I`), so its verdict is FAIL when the statement is sound and
ERROR when header, libraries or statement are not. The naive way compiles each case file
(its header through the compatibility layer, the statement, then `Admitted` or the same
answer as the checker's) with coqc, against the libraries the checker built, in the same
sandbox, one file after the other; the checker runs with one worker for the comparison.
Times are wall-clock and CPU seconds (this process and every prover process,
benchmarks/cpu.py). CPU is the figure to read when the machine is loaded (the load
average is printed at the end).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from cpu import tree_cpu as cpu

from proofeval.loaders import Selection, load_benchmark
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.coq import CoqChecker, compat
from proofeval.provers.coq.project import open_project
from proofeval.provers.coq.session import Limits, coq_version
from proofeval.provers.coq.toolchain import Toolchain, resolve
from proofeval.provers.interface import CheckSettings, Job

ANSWER = "Proof. exact I. Qed."


def clock() -> float:
    return time.monotonic()


def check(
    problems: list[Problem], settings: CheckSettings, verbose: bool = False
) -> tuple[dict, list[str], float, float]:
    """Verdicts, events, wall-clock and CPU seconds of checking `problems`."""
    got: dict[str, Outcome] = {}
    events: list[str] = []
    jobs = [Job(Attempt(p.id, 0, ANSWER, ANSWER), p, 300.0) for p in problems]
    start, used = clock(), cpu()

    def record(attempt: Attempt, outcome: Outcome) -> None:
        got[attempt.problem_id] = outcome
        if verbose:  # progress, and what a run cut short leaves
            print(f"  [{len(got)}] {outcome.verdict.value} {attempt.problem_id}", flush=True)

    CoqChecker(settings, record, events.append).run(jobs)
    wall = clock() - start
    return got, events, wall, cpu() - used


def naive(
    problems: list[Problem], workdir: Path, chain: Toolchain, proof: str
) -> tuple[float, float, int]:
    """Wall-clock and CPU seconds of coqc on every case file (header through the
    compatibility layer, statement, `proof`), and how many it accepted."""
    limits = Limits(chain=chain)
    trees: dict = {}
    total, total_cpu, passed = 0.0, 0.0, 0
    for number, problem in enumerate(problems):
        text, _ = compat.apply(problem.header, coq_version(chain))
        project = open_project(Path(problem.directory), workdir, limits, trees)
        case = project.copy / f"case_{number}.v"  # where coqc may write its .vo
        case.write_text(f"{text}\n{problem.statement}\n{proof}\n")
        try:
            flags = project.prepare(case)  # the libraries, from the cache: not counted
        except Exception as exc:  # noqa: BLE001 - a case whose libraries fail does not count
            print(f"  libraries: {problem.id}: {exc}")
            continue
        start, used = clock(), cpu()
        done = project.tree.run(["coqc", "-q", *chain.coq_flags, *flags, str(case)])
        total, total_cpu = total + clock() - start, total_cpu + cpu() - used
        passed += done.returncode == 0
    return total, total_cpu, passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--coq", default="", help="a Coq toolchain (issue 33's --coq)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--sample", type=int, default=40, help="cases of the second run and the comparison"
    )
    parser.add_argument("--cache", type=Path, help="the build cache (default: a fresh one)")
    args = parser.parse_args()
    problems = load_benchmark(args.root, Selection(only=tuple(args.only))).problems
    settings = CheckSettings(workers=args.workers, coq_toolchain=args.coq)
    chain = resolve(args.coq)
    with tempfile.TemporaryDirectory(prefix="ntp4vc-bench-") as scratch:
        os.environ["PROOFEVAL_COQ_CACHE"] = str(args.cache or Path(scratch) / "cache")
        print(f"{len(problems)} cases, {chain.describe()}, {args.workers} workers", flush=True)
        got, events, used, _cpu = check(problems, settings, verbose=True)
        built = [e for e in events if e.startswith("library files")]
        print(f"first run: {used:.0f} s; {' '.join(built)}", flush=True)
        verdicts = Counter(o.verdict.value for o in got.values())
        print(f"verdicts: {dict(verdicts)}; type-check: {verdicts[Verdict.FAIL.value]}")
        for pid, outcome in sorted(got.items()):
            if outcome.verdict is not Verdict.FAIL:
                print(f"  {outcome.verdict.value} {pid}: {outcome.message[:200]}")
        sound = [p for p in problems if got[p.id].verdict is Verdict.FAIL]
        sound = sound[:: max(1, len(sound) // max(1, args.sample))][: args.sample]
        _got, events, used, _cpu = check(sound, settings)
        built = [e for e in events if e.startswith("library files")]
        print(f"second run, {len(sound)} cases: {used:.0f} s; {' '.join(built)}", flush=True)
        one = dataclasses.replace(settings, workers=1)
        _got, _events, checker_s, checker_cpu = check(sound, one)
        workdir = Path(scratch) / "naive"
        workdir.mkdir()
        ways = [
            ("Admitted", *naive(sound, workdir, chain, "Admitted.")),
            ("the answer", *naive(sound, workdir, chain, ANSWER)),
        ]
    n = max(1, len(sound))
    print(
        f"per case, {len(sound)} sound cases, one worker: checker {checker_s / n:.2f} s wall, "
        f"{checker_cpu / n:.2f} s CPU"
    )
    for way, seconds, cpu_s, ok in ways:
        print(
            f"  coqc alone, statement and {way} ({ok} accepted): {seconds / n:.2f} s wall, "
            f"{cpu_s / n:.2f} s CPU; overhead {100 * (checker_s / max(seconds, 1e-9) - 1):.0f}% "
            f"wall, {100 * (checker_cpu / max(cpu_s, 1e-9) - 1):.0f}% CPU"
        )
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
