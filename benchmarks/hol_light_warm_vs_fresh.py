"""Warm forking HOL Light checker against the naive way, in one run on the same problem.

Measures, and prints with the ratios the targets are stated in:
1. `proofeval check` end to end with 1 attempt and with N attempts of one problem
   (target: N=60 costs at most 10% more wall time than 1);
2. the naive way: a fresh HOL Light process per attempt (load the core, prove, exit);
3. throughput on CPU-bound proofs with 1 worker and with 2 (target: at least 1.7x).

Usage: python benchmarks/hol_light_warm_vs_fresh.py [--attempts 60] [--naive-runs 2]
Takes about 12 minutes on 2 cores (each HOL Light start loads the core, about 2 minutes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proofeval.model import Attempt, Problem
from proofeval.provers.hol_light.pool import HolLightChecker
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher
from proofeval.provers.interface import CheckSettings, Job

GOAL = "`!n. n + 0 = n`"
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"
# A real proof that spends most of a second of CPU normalising a polynomial.
HEAVY_GOAL = "`(x + y + z + w) EXP 7 = (w + z + y + x) EXP 7`"
HEAVY_PROOF = "ARITH_TAC"


def write_benchmark(root: Path, attempts: int) -> tuple[Path, Path]:
    problems = root / "problems.jsonl"
    problems.write_text(json.dumps({"id": "bench.add_0", "statement": GOAL}) + "\n")
    answers = root / f"answers-{attempts}.jsonl"
    line = json.dumps({"problem_id": "bench.add_0", "answer": PROOF})
    answers.write_text((line + "\n") * attempts)
    return problems, answers


def time_cli(problems: Path, answers: Path, out: Path) -> float:
    cmd = [
        sys.executable,
        "-m",
        "proofeval.cli",
        "check",
        str(problems),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--workers",
        "2",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_fresh_process() -> float:
    script = f'#use "{DEBIAN_HOL_LIGHT / "hol.ml"}";;\nlet _ = prove({GOAL}, {PROOF});;\n'
    start = time.perf_counter()
    done = subprocess.run(
        [str(DEBIAN_HOL_LIGHT / "ocaml")], input=script, text=True, capture_output=True
    )
    elapsed = time.perf_counter() - start
    if "Exception" in done.stdout or done.returncode != 0:
        raise RuntimeError("the naive HOL Light run failed")
    return elapsed


def time_workers(base, workers: int, count: int) -> float:
    problem = Problem(id="bench.heavy", statement=HEAVY_GOAL)
    jobs = [
        Job(Attempt(problem.id, i, HEAVY_PROOF, HEAVY_PROOF), problem, 120.0) for i in range(count)
    ]
    verdicts = []
    checker = HolLightChecker(
        CheckSettings(workers=workers), lambda a, o: verdicts.append(o), base=base
    )
    start = time.perf_counter()
    checker.run(jobs)
    elapsed = time.perf_counter() - start
    if any(o.verdict != "OK" for o in verdicts) or len(verdicts) != count:
        raise RuntimeError(f"heavy proofs did not all pass: {verdicts[:3]}")
    return elapsed


def measure_cli(attempts: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problems, one = write_benchmark(root, 1)
        _, many = write_benchmark(root, attempts)
        return time_cli(problems, one, root / "run-1"), time_cli(problems, many, root / "run-n")


def measure_workers(heavy: int) -> tuple[float, float]:
    launcher = Launcher()
    try:
        base = launcher.start()
        time_workers(base, 1, 2)  # warm up: the first clone and context set-up
        return time_workers(base, 1, heavy), time_workers(base, 2, heavy)
    finally:
        launcher.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=60)
    parser.add_argument("--naive-runs", type=int, default=2)
    parser.add_argument("--heavy", type=int, default=16, help="CPU-bound attempts per pool")
    parser.add_argument(
        "--parts", default="cli,naive,workers", help="which measurements to run (comma-separated)"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    n = args.attempts
    if "cli" in parts:
        t1, tn = measure_cli(n)
        print(f"proofeval check, 1 attempt:            {t1:8.1f} s")
        print(f"proofeval check, {n} attempts:          {tn:8.1f} s")
        print(f"  ratio {n}/1:                          {tn / t1:8.3f}   (target <= 1.10)")
        print(f"  cost per extra attempt:              {(tn - t1) / (n - 1) * 1000:8.1f} ms")
    if "naive" in parts:
        naive = [time_fresh_process() for _ in range(args.naive_runs)]
        each = sum(naive) / len(naive)
        print(f"naive, fresh HOL Light per attempt:    {each:8.1f} s  (mean of {len(naive)})")
        print(f"  naive {n} attempts (estimated):       {each * n:8.1f} s")
        if "cli" in parts:
            print(f"  speed-up of proofeval at {n}:         {each * n / tn:8.1f}x")
    if "workers" in parts:
        w1, w2 = measure_workers(args.heavy)
        print(f"{args.heavy} CPU-bound proofs, 1 worker:        {w1:8.2f} s")
        print(f"{args.heavy} CPU-bound proofs, 2 workers:       {w2:8.2f} s")
        print(f"  throughput ratio 2/1:                {w1 / w2:8.2f}x  (target >= 1.7)")


if __name__ == "__main__":
    main()
