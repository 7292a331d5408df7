"""What `proofeval check --feedback on` costs per FAIL, against checking it, in one run.

For each prover, a benchmark of N problems with one FAIL each is checked with feedback
off (a fresh run directory), then the same run is resumed with feedback on: every
attempt is already checked, so the second pass is the feedback alone. Prints the wall
clock and the CPU time (this process and every prover process, benchmarks/cpu.py) per
FAIL of both, their ratios and the load average.

Usage: python benchmarks/check_feedback.py [--provers hol-light,coq] [--problems 10]
                                           [--native off|on]
HOL Light's core is loaded once first (bytecode: about 2.5 minutes of CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from cpu import tree_cpu
from states_apply import launcher

from proofeval.provers.interface import CheckSettings
from proofeval.runs.check import CheckOptions, run_check

HOL = ("`!n. n + {i} = {i} + n /\\ {i} * n = n * {i}`", "GEN_TAC THEN CONJ_TAC THEN REWRITE_TAC[]")
COQ = (
    "Theorem t{i} : forall n : nat, n + {i} = {i} + n /\\ {i} * n = n * {i}.",
    "intros n. split. reflexivity.",
)
HEADERS = {"hol-light": "", "coq": "Require Import Arith Lia."}


def benchmark(root: Path, prover: str, count: int) -> CheckOptions:
    statement, answer = HOL if prover == "hol-light" else COQ
    problems = [{"id": f"p{i}", "prover": prover, "category": "c", "header": HEADERS[prover],
                 "statement": statement.format(i=i + 2)} for i in range(count)]  # fmt: skip
    (root / "bench.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    lines = (json.dumps({"problem_id": p["id"], "answer": answer}) + "\n" for p in problems)
    (root / "answers.jsonl").write_text("".join(lines))
    return CheckOptions(root / "bench.jsonl", root / "run", answers=root / "answers.jsonl",
                        settings=CheckSettings(workers=1))  # fmt: skip


def measured(opts: CheckOptions, warm: dict[str, object]) -> tuple[float, float, int]:
    """Wall and CPU seconds of one pass, and its FAILs."""
    start, cpu = time.perf_counter(), tree_cpu()
    rows = run_check(opts, warm)
    fails = sum(r.verdict is not None and r.verdict.value == "FAIL" for r in rows)
    return time.perf_counter() - start, tree_cpu() - cpu, fails


def measure(prover: str, count: int, warm: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        opts = benchmark(Path(tmp), prover, count)
        check_wall, check_cpu, fails = measured(opts, warm)
        assert fails == count, f"{fails} of {count} attempts FAIL"
        feedback_wall, feedback_cpu, _ = measured(replace(opts, feedback=True), warm)
        entries = (opts.out / "feedback.jsonl").read_text().splitlines()
        assert len(entries) == count, f"feedback on {len(entries)} of {count} FAILs"
    ms = 1000 / count
    print(
        f"{prover}: per FAIL, check {check_wall * ms:.0f} ms wall, {check_cpu * ms:.0f} ms "
        f"CPU; feedback {feedback_wall * ms:.0f} ms wall, {feedback_cpu * ms:.0f} ms CPU; "
        f"feedback/check {feedback_wall / check_wall:.2f}x wall, "
        f"{feedback_cpu / check_cpu:.2f}x CPU (over {count} FAILs; load average "
        f"{os.getloadavg()[0]:.1f})"
    )


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--provers", default="hol-light,coq")
    args.add_argument("--problems", type=int, default=10)
    args.add_argument("--native", choices=["off", "on"], default="off")
    opts = args.parse_args()
    provers = opts.provers.split(",")
    warm: dict[str, object] = {}
    started = launcher(opts.native) if "hol-light" in provers else None
    try:
        if started is not None:
            boot = time.perf_counter()
            warm["hol-light"] = started.start()
            print(f"HOL Light core ({opts.native=}) loaded in {time.perf_counter() - boot:.0f} s")
        for prover in provers:
            measure(prover, opts.problems, warm)
    finally:
        if started is not None:
            started.close()


if __name__ == "__main__":
    main()
