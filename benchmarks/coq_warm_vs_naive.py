"""Coq: per-attempt overhead of the warm checker against the naive way (coqc of the whole
file per attempt, in the same sandbox), on miniF2F-rocq headers, and the throughput of 2
workers against 1. One run prints every figure:

    .venv/bin/python benchmarks/coq_warm_vs_naive.py [--problems 12] [--copies 4]

Overhead is the wall time per attempt minus the proof's own time (its tactics and Qed as
Coq's `Time` measures them in the naive run). Headers are miniF2F-rocq's (../shared/data);
without them, three typical ones are used. Each header gets attempts of four kinds: a
cheap correct proof (induction), a correct proof by reflection (ring on R or lia), an
unfinished one and a wrong one; every attempt is checked `--copies` times (as pass@k
samples would be).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proofeval.model import Attempt, Outcome, Problem
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq.toolchain import Toolchain
from proofeval.provers.interface import CheckSettings, Job
from proofeval.provers.sandbox import bwrap_prefix

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "minif2f-rocq"
FALLBACK_HEADERS = [
    "Require Import Reals.\nOpen Scope R_scope.\n",
    "Require Import ZArith Lia.\nOpen Scope Z_scope.\n",
    "Require Import Arith Lia.\n",
]
CHEAP = (
    "Theorem bench_cheap : forall n : nat, (n + 0 = n)%nat.",
    "intros n; induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity].",
)
REAL = ("Theorem bench_ring : forall x y : R, (x * y = y * x)%R.", "intros; ring.")
NAT = ("Theorem bench_lia : forall n : nat, (n + 0 = n)%nat.", "intros; lia.")
FINISHED = re.compile(r"Finished (?:failing )?transaction in ([\d.]+) secs")


def headers(count: int) -> list[str]:
    if not SHARED.is_dir():
        return FALLBACK_HEADERS
    from proofeval.loaders import minif2f_rocq

    seen: dict[str, None] = {}
    for problem in minif2f_rocq.load(SHARED / "valid", "valid"):
        if "Lia" in problem.header or "Reals" in problem.header:
            seen.setdefault(problem.header, None)
    return list(seen)[:count]


def attempts_for(header: str, index: int) -> list[tuple[Problem, str, str]]:
    """(problem, answer, kind) for one header."""
    reflective = REAL if "Reals" in header else NAT
    kinds = [
        ("cheap OK", CHEAP, CHEAP[1]),
        ("reflective OK", reflective, reflective[1]),
        ("unfinished", CHEAP, "intros n."),
        ("wrong", CHEAP, "intros n; reflexivity."),
    ]
    out = []
    for kind, (statement, _), answer in kinds:
        pid = f"h{index}-{statement.split()[1]}"
        out.append((Problem(pid, statement, "coq", header=header), answer, kind))
    return out


def naive(problem: Problem, answer: str, where: Path) -> tuple[float, float, float]:
    """(wall seconds of coqc on the whole file, the proof's own seconds, the seconds of
    its Print Assumptions), the naive checker doing what the warm one does."""
    proof = f"Time ({answer.strip().removesuffix('.')}).\n"  # each answer is one sentence
    name = problem.statement.split()[1]
    text = f"{problem.header}\n{problem.statement}\nProof.\n{proof}Time Qed.\n"
    text += f"Time Print Assumptions {name}.\n"
    source = where / "Attempt.v"
    source.write_text(text)
    (where / "ocamlfind.conf").write_text(f'path="{Toolchain().ocaml_path()}"\n')
    cmd = bwrap_prefix(writable=[where]) + ["coqc", "-q", str(source)]
    env = {"PATH": "/usr/bin", "HOME": str(where), "OCAMLFIND_CONF": str(where / "ocamlfind.conf")}
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=where)
    wall = time.monotonic() - start
    times = [float(x) for x in FINISHED.findall(done.stdout + done.stderr)]
    if len(times) == 3:  # the tactic, Qed, Print Assumptions
        return wall, times[0] + times[1], times[2]
    return wall, sum(times), 0.0


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, every process included."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def warm(jobs: list[Job], workers: int) -> tuple[float, dict[tuple[str, int], Outcome]]:
    """Wall seconds of checking every job with `workers`, and the outcomes; prints how
    busy the whole machine was meanwhile (other users' jobs included)."""
    got: dict[tuple[str, int], Outcome] = {}
    busy, total = machine_cpu()
    start = time.monotonic()
    CoqChecker(
        CheckSettings(workers=workers), lambda a, o: got.__setitem__((a.problem_id, a.index), o)
    ).run(jobs)
    wall = time.monotonic() - start
    busy_after, total_after = machine_cpu()
    cores = os.cpu_count() or 1
    used = cores * (busy_after - busy) / max(1, total_after - total)
    print(f"{workers} worker(s): {wall:.1f} s; the machine was {used:.2f} of {cores} cores busy")
    return wall, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=12, help="headers to use")
    parser.add_argument("--copies", type=int, default=4, help="times each attempt is checked")
    args = parser.parse_args()
    cases = [c for i, h in enumerate(headers(args.problems)) for c in attempts_for(h, i)]
    print(f"{len(cases) // 4} headers, {len(cases)} distinct attempts x {args.copies} copies")

    own: dict[int, float] = {}
    assumptions: dict[int, float] = {}
    naive_overhead: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="proofeval-bench-") as tmp:
        for i, (problem, answer, kind) in enumerate(cases):
            wall, own[i], assumptions[i] = naive(problem, answer, Path(tmp))
            naive_overhead.setdefault(kind, []).append(wall - own[i])

    jobs = [
        Job(Attempt(p.id, i * args.copies + c, a, a), p, 120)
        for i, (p, a, _) in enumerate(cases)
        for c in range(args.copies)
    ]
    seconds_1, outcomes = warm(jobs, 1)
    seconds_2, _ = warm(jobs, 2)
    warm_overhead: dict[str, list[float]] = {}
    without: dict[str, list[float]] = {}  # less Print Assumptions' own time
    verdicts: dict[str, set[str]] = {}
    for (_pid, index), outcome in outcomes.items():
        i = index // args.copies
        kind = cases[i][2]
        overhead = max(0.0, outcome.seconds - own[i])
        warm_overhead.setdefault(kind, []).append(overhead)
        without.setdefault(kind, []).append(max(0.0, overhead - assumptions[i]))
        verdicts.setdefault(kind, set()).add(outcome.verdict.value)

    print(f"\n{'attempt kind':<15}{'verdict':>8}{'naive':>8}{'warm':>8}{'ratio':>7}{'warm-PA':>9}")
    every = [[x for v in d.values() for x in v] for d in (naive_overhead, warm_overhead, without)]
    rows = [(k, naive_overhead[k], warm_overhead[k], without[k]) for k in naive_overhead]
    for kind, n, w, x in [*rows, ("all", *every)]:
        shown = ",".join(sorted(verdicts.get(kind, {"-"}))) if kind != "all" else ""
        mn, mw, mx = statistics.median(n), statistics.median(w), statistics.median(x)
        print(f"{kind:<15}{shown:>8}{mn:>8.3f}{mw:>8.3f}{mn / max(mw, 1e-3):>6.0f}x{mx:>9.3f}")
    print(
        "median seconds per attempt beyond the proof's own time; naive: coqc of the whole\n"
        "file with Print Assumptions, in the sandbox; warm-PA: warm less the time of Print\n"
        "Assumptions itself (the traversal of every library proof the theorem reaches)"
    )
    print(f"\nthroughput: 1 worker {len(jobs) / seconds_1:.1f} attempts/s ({seconds_1:.1f} s), "
          f"2 workers {len(jobs) / seconds_2:.1f} attempts/s ({seconds_2:.1f} s): "
          f"{seconds_1 / seconds_2:.2f}x")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
