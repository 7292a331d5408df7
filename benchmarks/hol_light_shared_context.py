"""A header loaded once for proof states and checks, against a load of its own.

As `proofeval serve` and `proofeval mcp` do, on one HOL Light core: a proof state of a
problem whose header loads a Library file is started (the warm-up: the header is
loaded), then an attempt at that problem is checked: the check forks the template the
states loaded. The naive way, what every first check after a warm-up paid before the
template was shared: an attempt at the same statement under the same header with one
more newline, a header nobody loaded, whose check loads it first. Prints the seconds of
each, their ratio, and the HOL Light processes' proportional set size after each.

Usage: python benchmarks/hol_light_shared_context.py [--native on] [--library prime.ml]
"""

from __future__ import annotations

import argparse
import time

from proofeval.checking.memory import descendants_mb
from proofeval.model import Verdict
from proofeval.provers.interface import CheckSettings
from proofeval.scale.api import Checker, problem
from proofeval.scale.sessions import States

STATEMENT = "`!n. n + 0 = n`"
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"


def timed_check(checker: Checker, header: str) -> float:
    began = time.perf_counter()
    [outcome] = checker.check([(problem("hol-light", STATEMENT, header=header), PROOF)])
    assert outcome.verdict is Verdict.OK, outcome
    return time.perf_counter() - began


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--native", choices=["off", "on"], default="on")
    args.add_argument("--library", default="prime.ml", help="a file of HOL Light's Library")
    opts = args.parse_args()
    header = f'needs "Library/{opts.library}";;\n'
    settings = CheckSettings(workers=1, native=opts.native)
    with Checker(settings) as checker, States(checker) as states:
        checker.warm_up(["hol-light"])
        print(f"core loaded; HOL Light processes {descendants_mb():.0f} MiB")
        began = time.perf_counter()
        with states.session() as session:
            session.start(problem("hol-light", STATEMENT, header=header))
        warm_up = time.perf_counter() - began
        print(f"warm-up (a proof state's start, the header loaded): {warm_up:.2f} s, "
              f"{descendants_mb():.0f} MiB")  # fmt: skip
        shared = timed_check(checker, header)
        print(f"first check in the warmed header: {shared:.2f} s, {descendants_mb():.0f} MiB")
        own = timed_check(checker, header + "\n")
        print(f"first check in a header of its own (the naive way): {own:.2f} s, "
              f"{descendants_mb():.0f} MiB")  # fmt: skip
        print(f"naive / shared: {own / shared:.1f}x")


if __name__ == "__main__":
    main()
