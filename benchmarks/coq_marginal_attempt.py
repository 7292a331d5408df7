"""Coq: what one more attempt costs against a warm header, above the tactics' own time.

    .venv/bin/python benchmarks/coq_marginal_attempt.py [--attempts 41] [--coq debian13]

One worker checks 1 attempt, then N, of a small statement under `Require Import Arith
Lia.`, alternating `intros; lia.` and `apply Nat.add_comm.` (whole checker runs, header
load included in both); the marginal cost is their difference over N - 1. The tactics'
own time is measured the naive way in the same run: coqc of the header with N proofs
against coqc of the header with one, in the same sandbox, over N - 1. Their difference
is what the checker adds to an attempt (the target: at most 50 ms), with the second line
off; with it on, every OK also pays a fresh coqc of its file and coqchk, set against
coqc of the same file (the target: at most that).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from proofeval.model import Attempt, Problem, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq.toolchain import OCAML_RUNTIME, resolve
from proofeval.provers.interface import CheckSettings, Job

HEADER = "Require Import Arith Lia.\n"
STATEMENT = "Theorem comm : forall n m : nat, n + m = m + n."
PROOFS = ["intros; lia.", "apply Nat.add_comm."]


def checker_seconds(count: int, chain: str, replay: bool) -> float:
    problem = Problem(id="comm", benchmark="b", prover="coq", header=HEADER,
                      statement=STATEMENT, coq_toolchain=chain)  # fmt: skip
    jobs = [
        Job(Attempt("comm", i, PROOFS[i % 2], PROOFS[i % 2]), problem, 60) for i in range(count)
    ]
    verdicts: list[Verdict] = []
    start = time.monotonic()
    settings = CheckSettings(workers=1, replay=replay)
    CoqChecker(settings, lambda _a, o: verdicts.append(o.verdict)).run(jobs)
    seconds = time.monotonic() - start
    assert verdicts == [Verdict.OK] * count, verdicts
    return seconds


def coqc_seconds(count: int, chain_name: str) -> float:
    chain = resolve(chain_name)
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        body = "".join(
            f"{STATEMENT.replace('comm', f'comm{i}')}\nProof. {PROOFS[i % 2]} Qed.\n"
            for i in range(count)
        )
        (where / "a.v").write_text(HEADER + body)
        (where / "ocamlfind.conf").write_text(f'path="{chain.ocaml_path()}"\n')
        env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8", **OCAML_RUNTIME,
               "OCAMLFIND_CONF": str(where / "ocamlfind.conf")}  # fmt: skip
        command = [*chain.sandbox([where]), chain.binary("coqc"), "-q", *chain.coq_flags, "a.v"]
        start = time.monotonic()
        subprocess.run(command, cwd=where, env=env, check=True, capture_output=True)
        return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=41, help="N, the larger run")
    parser.add_argument("--coq", default="", help="a Coq toolchain (default: the host's)")
    args = parser.parse_args()
    n = args.attempts
    checker_seconds(1, args.coq, True)  # warm the plugin build and the file cache
    one, many = checker_seconds(1, args.coq, False), checker_seconds(n, args.coq, False)
    naive_one, naive_many = coqc_seconds(1, args.coq), coqc_seconds(n, args.coq)
    second = checker_seconds(n, args.coq, True)
    marginal = (many - one) / (n - 1)
    tactics = (naive_many - naive_one) / (n - 1)
    per_ok = (second - many) / n
    print(f"{resolve(args.coq).describe()}: {n} attempts against 1, one worker")
    print(f"  checker, second line off: 1 attempt {one:.2f} s, {n} attempts {many:.2f} s")
    print(f"  coqc: 1 proof {naive_one:.2f} s, {n} proofs {naive_many:.2f} s")
    print(
        f"  one more attempt: {marginal * 1000:.0f} ms; the tactics' own time: "
        f"{tactics * 1000:.0f} ms; the checker adds {(marginal - tactics) * 1000:.0f} ms"
    )
    print(f"  second line on: {n} attempts {second:.2f} s, {per_ok:.2f} s per OK against "
          f"{naive_one:.2f} s for coqc of one file ({per_ok / naive_one:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
