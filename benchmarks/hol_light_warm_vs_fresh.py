"""Warm forking HOL Light checker against the naive way, in one run on the same problem.

Measures, and prints with the ratios the targets are stated in:
1. `proofeval check` end to end with 1 attempt and with N attempts of one problem
   (target: N=60 costs at most 10% more wall time than 1);
2. the naive way: a fresh HOL Light process per attempt (load the core, prove, exit);
3. throughput on CPU-bound proofs with 1 worker and with 2 (target: at least 1.7x);
4. (part `attempt`, not run by default) the round trip of a small attempt on one warm
   process, median of --round-trips, on the path --native names.

Usage: python benchmarks/hol_light_warm_vs_fresh.py [--attempts 60] [--naive-runs 2]
       [--native auto|on|off] [--parts cli,naive,workers]
Takes about 12 minutes on 2 cores (each HOL Light start loads the core, about 2 minutes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cpu import process_tree_cpu

from proofeval.model import Attempt, Problem
from proofeval.provers.hol_light.native import native_build
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


def time_cli(problems: Path, answers: Path, out: Path, native: str) -> float:
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
        "--native",
        native,
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


def measure_cli(attempts: int, native: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problems, one = write_benchmark(root, 1)
        _, many = write_benchmark(root, attempts)
        one_run = time_cli(problems, one, root / "run-1", native)
        return one_run, time_cli(problems, many, root / "run-n", native)


def host_pid(root: int, sandbox_pid: int) -> int:
    """The host's pid of the process that is `sandbox_pid` in the sandbox under `root`."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
        except (OSError, ValueError):
            continue
        nspid = fields.get("NSpid", "").split()
        if len(nspid) > 1 and int(nspid[-1]) == sandbox_pid and _under(root, int(nspid[0])):
            return int(nspid[0])
    raise RuntimeError(f"no process {sandbox_pid} in the sandbox")


def _under(root: int, pid: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return False


def measure_attempts(count: int, native: str) -> tuple[list[float], float]:
    """Round trips of small attempts on one warm process (what one worker pays per
    attempt: the fork, natively the answer's compilation, the check, the replay), and the
    CPU seconds that process and all it started spent per attempt (which, unlike the
    round trip, other load on the machine does not stretch)."""
    build = native_build(DEBIAN_HOL_LIGHT) if native == "on" else None
    launcher = Launcher(native=build)
    try:
        base = launcher.start()  # the sandbox's first process: it must outlive the clone
        proc = base.clone()
        if proc.add_goal("g", GOAL) is not None:
            raise RuntimeError("the goal does not parse")
        assert launcher._proc is not None
        pid = host_pid(launcher._proc.pid, proc.conn.pid)
        proc.check("g", PROOF, 60.0, 2048)  # the first attempt numbers the theorems
        times = []
        cpu_before = process_tree_cpu(pid)
        for _ in range(count):
            start = time.perf_counter()
            if proc.check("g", PROOF, 60.0, 2048).verdict != "OK":
                raise RuntimeError("the small proof did not pass")
            times.append(time.perf_counter() - start)
        return times, (process_tree_cpu(pid) - cpu_before) / count
    finally:
        launcher.close()


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
        "--parts",
        default="cli,naive,workers",
        help="which measurements to run (comma-separated; also: attempt)",
    )
    parser.add_argument(
        "--round-trips", type=int, default=200, help="small attempts in the attempt part"
    )
    parser.add_argument(
        "--native",
        choices=["auto", "on", "off"],
        default="auto",
        help="the HOL Light path of the cli part (`proofeval check --native`) and the attempt "
        "part (on or off; auto is off there)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    n = args.attempts
    if "cli" in parts:
        t1, tn = measure_cli(n, args.native)
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
    if "attempt" in parts:
        times, cpu = measure_attempts(args.round_trips, args.native)
        times.sort()
        median = statistics.median(times)
        print(f"one warm process, {len(times)} small attempts, native {args.native}:")
        print(f"  CPU per attempt (process + waited):  {cpu * 1000:8.1f} ms")
        print(f"  median round trip:                   {median * 1000:8.1f} ms")
        print(f"  10th / 90th percentile:              {times[len(times) // 10] * 1000:8.1f} / "
              f"{times[len(times) * 9 // 10] * 1000:.1f} ms")  # fmt: skip
    if "workers" in parts:
        w1, w2 = measure_workers(args.heavy)
        print(f"{args.heavy} CPU-bound proofs, 1 worker:        {w1:8.2f} s")
        print(f"{args.heavy} CPU-bound proofs, 2 workers:       {w2:8.2f} s")
        print(f"  throughput ratio 2/1:                {w1 / w2:8.2f}x  (target >= 1.7)")


if __name__ == "__main__":
    main()
