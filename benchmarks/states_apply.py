"""HOL Light proof states against the naive way, in one run on the same problem.

Measures, and prints with the ratios the targets are stated in:
1. one `apply` of a small tactic on a warm state (median; target at most 20 ms on the
   bytecode path), against a whole `check` of the same prefix and tactic each time (the
   naive way to learn where a proof stands: check all of it again); wall clock, and the
   CPU time of the prover processes (which a busy machine does not inflate);
2. 1,000 live states of one problem: the memory of every HOL Light process before and
   after (proportional set size; target within 2 GB).

Usage: python benchmarks/states_apply.py [--native off|on] [--runs 30] [--states 1000]
       [--warmup 40]
The bytecode core takes about 2.5 minutes of CPU to load, the native one about 20 s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from cpu import descendants_cpu

from proofeval.checking.memory import descendants_mb
from proofeval.model import Stage, Verdict
from proofeval.provers.hol_light.backend import assemble as hol_light_proof
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher
from proofeval.provers.hol_light.states import HolLightStateFactory
from proofeval.provers.interface import CheckSettings
from proofeval.provers.states import Goals, Step, StepLimits
from proofeval.scale.api import problem

STATEMENT = "`!a b c. (a + b) + c = c + (b + a) /\\ a * 1 = a /\\ 0 + c = c`"
PREFIX = [("REPEAT GEN_TAC", 1), ("CONJ_TAC", 2)]  # then the small tactic on `(a + b) + c = ...`
SMALL = "ARITH_TAC"
LIMITS = StepLimits(30.0, 4096)


def launcher(native: str) -> Launcher:
    build = None
    if native == "on":
        from proofeval.provers.hol_light.native import native_build

        build = native_build(DEBIAN_HOL_LIGHT)
    return Launcher(native=build)


def timed(op: Callable[[int], None], runs: int) -> tuple[list[float], float]:
    """Wall seconds of each run, and the prover processes' CPU seconds per run."""
    times = []
    cpu = descendants_cpu()
    for i in range(runs):
        start = time.perf_counter()
        op(i)
        times.append(time.perf_counter() - start)
    return times, (descendants_cpu() - cpu) / runs


def warm_state(states) -> str:
    states.start("root")
    parent = "root"
    for i, (tactic, _made) in enumerate(PREFIX):
        result = states.apply(parent, f"p{i}", tactic, LIMITS)
        assert isinstance(result, Goals), result
        parent = f"p{i}"
    return parent


def time_applies(states, warm: str, runs: int) -> tuple[list[float], float]:
    def apply(i: int) -> None:
        result = states.apply(warm, f"a{i}", SMALL, LIMITS)
        assert isinstance(result, Goals), result
        states.release(f"a{i}")

    return timed(apply, runs)


def time_checks(base, runs: int) -> tuple[list[float], float]:
    proc = base.clone()
    reason = proc.add_goal("g", STATEMENT)
    assert reason is None, reason
    steps = [Step(t, m) for t, m in PREFIX] + [Step(SMALL, 0)]
    proof = hol_light_proof(steps)  # the prefix and the tactic, the rest left open: FAIL

    def check(_i: int) -> None:
        outcome = proc.check("g", proof, 30.0, 4096)
        assert (outcome.verdict, outcome.stage) == (Verdict.FAIL, Stage.CHECK), outcome

    try:
        return timed(check, runs)
    finally:
        proc.close()


def live_states(factory, count: int) -> tuple[float, float, list[float]]:
    """Memory of all HOL Light processes before and after `count` states of one problem
    (each a branch of the warm state), and the wall seconds of each apply."""
    states = factory.open(problem("hol-light", STATEMENT))
    warm = warm_state(states)
    before = descendants_mb()
    times = []
    for i in range(count):
        tactic = SMALL if i % 2 else "ONCE_REWRITE_TAC[ADD_SYM]"
        start = time.perf_counter()
        result = states.apply(warm, f"s{i}", tactic, LIMITS)
        times.append(time.perf_counter() - start)
        assert isinstance(result, Goals), result
    assert states.count() == count + len(PREFIX) + 1
    after = descendants_mb()
    states.close()
    return before, after, times


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--native", choices=["off", "on"], default="off")
    args.add_argument("--runs", type=int, default=30)
    args.add_argument("--states", type=int, default=1000)
    args.add_argument("--warmup", type=int, default=40, help="applies before those timed")
    opts = args.parse_args()
    started = launcher(opts.native)
    try:
        boot = time.perf_counter()
        base = started.start()
        print(f"HOL Light core ({opts.native=}) loaded in {time.perf_counter() - boot:.0f} s")
        factory = HolLightStateFactory(base, CheckSettings().memory_mb)
        states = factory.open(problem("hol-light", STATEMENT))
        warm = warm_state(states)
        # A session that keeps stepping makes its heap its own, in huge pages, every 32
        # steps (proofeval_states.ml): the warm-up pays that, once.
        warmup, warmup_cpu = time_applies(states, warm, opts.warmup)
        print(
            f"warm-up: {opts.warmup} applies, median {statistics.median(warmup) * 1000:.1f} ms "
            f"wall, {warmup_cpu * 1000:.1f} ms CPU each on average"
        )
        applies, apply_cpu = time_applies(states, warm, opts.runs)
        checks, check_cpu = time_checks(base, opts.runs)
        a, c = statistics.median(applies), statistics.median(checks)
        print(
            f"apply {SMALL} on a warm state: median {a * 1000:.1f} ms wall, "
            f"{apply_cpu * 1000:.1f} ms CPU of the prover processes, over {opts.runs}"
        )
        print(
            f"check of the prefix and {SMALL}: median {c * 1000:.1f} ms wall, "
            f"{check_cpu * 1000:.1f} ms CPU, over {opts.runs}"
        )
        print(
            f"check / apply: {c / a:.1f}x wall, {check_cpu / apply_cpu:.1f}x CPU "
            "(target: apply <= 20 ms on bytecode)"
        )
        before, after, times = live_states(factory, opts.states)
        print(
            f"{opts.states} live states of one problem: HOL Light processes {before:.0f} MiB "
            f"before, {after:.0f} MiB after (+{(after - before) * 1024 / opts.states:.1f} KiB "
            f"a state; made in {sum(times):.1f} s; target: within 2048 MiB)"
        )
        tenth = max(1, len(times) // 10)
        first, last = statistics.median(times[:tenth]), statistics.median(times[-tenth:])
        print(
            f"  apply while making them: median {first * 1000:.1f} ms wall over the first "
            f"{tenth}, {last * 1000:.1f} ms over the last {tenth}"
        )
        states.close()
        factory.close()
    finally:
        started.close()


if __name__ == "__main__":
    main()
