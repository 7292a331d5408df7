"""Where one small HOL Light attempt's time goes, on both paths, and what a mix costs.

For each path (native, then bytecode), one sandboxed warm process with the core and the
goal `!n. n + 0 = n`, past its first checks (160 of the proof: a new clone's first heap
collapses make them dearer). Requests of growing scope are sent back to back, each kind
--round-trips times (median round trip; "each" is the mean time per request of the
back-to-back loop, so it includes what the server does after replying: reaping the
attempt's processes), and the CPU the warm process and all it started spent (natively the
warm parser with the fork that parsed each answer):
  ping          the request's framing and round trip, nothing checked
  denied        + parse and deny-check (natively: in a fork of the warm parser)
  untyped       + typing (natively: compiling up to the type checker)
  unbound       an unbound name, typed with the compiler's hint (Did you mean MULT_CLAUSES?)
  fail, off     + compile and link (native), the attempt's child, its verdict, reaping
  fail, on      + the replaying sibling (FAIL_TAC: no kernel step)
  rewrite       REWRITE_TAC[MULT_CLAUSES], off then on: a FAIL after kernel steps
  proof, off    + the proof (INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES])
  proof, on     + the replay of its kernel steps (the default)
Then (part `mix`) CPU of a mix of quick FAILs and OKs (--ok-every: one OK in that
many) with the replay on against off, on the same process, in alternating blocks.
Then (part `sizes`, not by default) CPU per attempt of quick and longer FAILs and OKs,
each replay on against off, in alternating blocks: what the replay costs each.
Then (part `series`, not by default) the wall time of the proof with the replay over
each 32 checks of a new clone, which shows its first heap collapses.
Then (part `ab`, not by default, with --base-sources) the same requests on two warm
processes, one built from the ocaml directory of another checkout (the base) and one from
this tree's, in alternating blocks of 5: runs here minutes apart differ by a third, so a
change is measured against its base interleaved in one run, not in runs of its own.
Then (part `cli`) the whole command, `proofeval check` with one worker and --attempts
attempts: the cost of one more attempt, Python side included (the engine, the store,
the framing), from the verdicts the run store holds as the command writes them (the
core's boot, which varies by seconds, is not in it); the Python side's share is that
cost less the server's "each" of `proof, on`.

Usage: python benchmarks/hol_light_attempt_phases.py [--round-trips 100]
       [--attempts 2001] [--paths native,bytecode] [--parts phases,mix,sizes,series,ab,cli]
       [--base-sources OTHER_CHECKOUT/src/proofeval/provers/hol_light/ocaml]
Run under nice; the bytecode core takes some 80 s to start, each path's cli part starts
it once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from proofeval.provers.hol_light import build as hol_build
from proofeval.provers.hol_light import native as hol_native
from proofeval.provers.hol_light.native import native_build
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher, WarmProcess

sys.path.insert(0, str(Path(__file__).parent))
from cpu import process_tree_cpu  # noqa: E402
from hol_light_warm_vs_fresh import host_pid  # noqa: E402

GOAL = "`!n. n + 0 = n`"
WARM_UP = 160  # checks before any is measured: five of the warm process's heap collapses
PROOF = "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"
QUICK_FAIL = "REWRITE_TAC[MULT_CLAUSES]"  # runs, leaves the goal: FAIL
# kind: (answer, replay, expected verdict); None is a ping
KINDS: dict[str, tuple[str, bool, str] | None] = {
    "ping": None,
    "denied": ("Obj.magic 0", True, "CHEATING"),
    "untyped": ("1 + 1", True, "ERROR"),
    "unbound": ("REWRITE_TAC[MULT_CLAUSE]", True, "ERROR"),  # with the compiler's hint
    "fail, off": ('FAIL_TAC "stop"', False, "FAIL"),
    "fail, on": ('FAIL_TAC "stop"', True, "FAIL"),
    "rewrite, off": (QUICK_FAIL, False, "FAIL"),  # the mix's FAIL: kernel steps, then FAIL
    "rewrite, on": (QUICK_FAIL, True, "FAIL"),
    "proof, off": (PROOF, False, "OK"),
    "proof, on": (PROOF, True, "OK"),
}

# part sizes: kind: (goal, answer, expected verdict)
SIZES = {
    "rewrite FAIL": (GOAL, QUICK_FAIL, "FAIL"),
    "ARITH FAIL": ("`!x y. x + y + 1 = y + x`", "ARITH_TAC", "FAIL"),
    "induction OK": (GOAL, PROOF, "OK"),
    "ARITH OK": ("`!x y z. x + y + z + 1 = z + y + x + 1`", "ARITH_TAC", "OK"),
    "MESON OK": ("`!p q r. (p ==> q) /\\ (q ==> r) ==> p ==> r`", "MESON_TAC[]", "OK"),
}


def one(proc: WarmProcess, kind: str) -> None:
    spec = KINDS[kind]
    if spec is None:
        if proc._request(["ping"], 60.0) != ["ok"]:
            raise RuntimeError("ping failed")
        return
    answer, replay, expected = spec
    outcome = proc.check("g", answer, 60.0, 2048, replay)
    if outcome.verdict != expected:
        raise RuntimeError(f"{kind}: {outcome.verdict} ({outcome.message}), not {expected}")


def loop(proc: WarmProcess, pid: int, kind: str, n: int) -> dict[str, float]:
    """Median round trip, mean per request back to back, CPU per request (ms)."""
    times = []
    cpu = process_tree_cpu(pid)
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        one(proc, kind)
        times.append(time.perf_counter() - t)
    each = (time.perf_counter() - start) / n
    return {
        "median": statistics.median(times) * 1000,
        "each": each * 1000,
        "cpu": (process_tree_cpu(pid) - cpu) / n * 1000,
    }


def warm(launcher: Launcher) -> tuple[WarmProcess, int]:
    base = launcher.start()
    proc = base.clone()
    if proc.add_goal("g", GOAL) is not None:
        raise RuntimeError("the goal does not parse")
    assert launcher._proc is not None
    pid = host_pid(launcher._proc.pid, proc.conn.pid)
    for kind in KINDS:  # the first of each warms what it uses
        one(proc, kind)
    # bytecode: some 48 ms an OK over a new clone's first 32, 15 from about the 160th
    for _ in range(WARM_UP):
        one(proc, "proof, on")
    return proc, pid


def phases(proc: WarmProcess, pid: int, n: int) -> dict[str, dict[str, float]]:
    rows = {kind: loop(proc, pid, kind, n) for kind in KINDS}
    print(f"  {'request':<12} {'median':>8} {'each':>8} {'CPU':>8}   (ms, {n} each)")
    previous = None
    for kind, r in rows.items():
        step = "" if previous is None else f"   +{r['each'] - rows[previous]['each']:.1f} each"
        print(f"  {kind:<12} {r['median']:8.2f} {r['each']:8.2f} {r['cpu']:8.2f}{step}")
        previous = kind
    return rows


def mix(proc: WarmProcess, pid: int, n: int, ok_every: int) -> None:
    """CPU of 2n attempts each way, one OK in ok_every and quick FAILs, replay on against
    off, in alternating blocks (runs here minutes apart differ by a third)."""

    def run(replay: bool, count: int) -> tuple[float, float]:
        cpu, start = process_tree_cpu(pid), time.perf_counter()
        for i in range(count):
            ok = i % ok_every == 0
            outcome = proc.check("g", PROOF if ok else QUICK_FAIL, 60.0, 2048, replay)
            if outcome.verdict != ("OK" if ok else "FAIL"):
                raise RuntimeError(f"mix: {outcome.verdict} ({outcome.message})")
        return process_tree_cpu(pid) - cpu, time.perf_counter() - start

    block = 5 * ok_every  # each block holds the mix's share of OKs exactly
    totals = {replay: [0.0, 0.0] for replay in (False, True)}
    for b in range(max(1, 2 * n // block)):
        for replay in (False, True) if b % 2 == 0 else (True, False):  # each first in turn
            for k, x in enumerate(run(replay, block)):
                totals[replay][k] += x
    off, on = totals[False], totals[True]
    print(f"  mix of {2 * n} attempts, 1 OK in {ok_every}, the rest {QUICK_FAIL} (FAIL), "
          f"in blocks of {block} alternately:")  # fmt: skip
    print(f"    CPU  replay off {off[0]:6.2f} s, on {on[0]:6.2f} s: {on[0] / off[0]:.2f}x"
          "  (target <= 1.30)")  # fmt: skip
    print(f"    wall replay off {off[1]:6.2f} s, on {on[1]:6.2f} s: {on[1] / off[1]:.2f}x")


def sizes(proc: WarmProcess, pid: int, n: int) -> None:
    """CPU per attempt of each of SIZES, replay on against off, in alternating blocks."""
    print(f"  {'attempt':<14} {'off':>7} {'on':>7}   (ms of CPU an attempt, {n} each way)")
    for i, (kind, (goal, answer, expected)) in enumerate(SIZES.items()):
        name = f"size{i}"
        if proc.add_goal(name, goal) is not None:
            raise RuntimeError(f"{kind}: the goal does not parse")
        cpu = {False: 0.0, True: 0.0}
        for block in range(max(1, n // 10)):
            for replay in (False, True) if block % 2 == 0 else (True, False):
                before = process_tree_cpu(pid)
                for _ in range(10):
                    outcome = proc.check(name, answer, 60.0, 2048, replay)
                    if outcome.verdict != expected:
                        raise RuntimeError(f"{kind}: {outcome.verdict} ({outcome.message})")
                cpu[replay] += process_tree_cpu(pid) - before
        off, on = (cpu[replay] / (10 * max(1, n // 10)) * 1000 for replay in (False, True))
        print(f"  {kind:<14} {off:7.2f} {on:7.2f}   {on / off:.2f}x", flush=True)


def verdicts(store: Path) -> int | None:
    """Verdicts committed so far in the run store (None before it can be read)."""
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return db.execute("SELECT count(*) FROM verdicts").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return None


def cli_rate(problems: Path, answers: Path, out: Path, native: str, attempts: int) -> float:
    """Seconds per attempt once checking runs: the store is read as the command writes it
    (each verdict is committed as it comes), from a tenth of the attempts to nine
    tenths, so the core's boot (15-90 s, which varies by seconds) is not in the figure."""
    cmd = [sys.executable, "-m", "proofeval.cli", "check", str(problems), "--answers",
           str(answers), "--out", str(out), "--workers", "1", "--native", native]  # fmt: skip
    marks: dict[str, tuple[float, int]] = {}
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as run:
        while run.poll() is None:
            time.sleep(0.05)
            done = verdicts(out / "proofeval.sqlite")
            if done is None:
                continue
            for name, at in (("first", attempts // 10), ("last", attempts * 9 // 10)):
                if done >= at and name not in marks:
                    marks[name] = (time.perf_counter(), done)
    if run.returncode != 0 or len(marks) < 2:
        raise RuntimeError(f"proofeval check failed (exit {run.returncode})")
    (t0, n0), (t1, n1) = marks["first"], marks["last"]
    return (t1 - t0) / (n1 - n0)


def series(launcher: Launcher, n: int) -> None:
    """Mean wall time of the proof with the replay over each 32 checks of a new clone (a
    warm process collapses its heap into huge pages every 32 forks)."""
    proc = launcher.start().clone()
    if proc.add_goal("g", GOAL) is not None:
        raise RuntimeError("the goal does not parse")
    times = []
    for _ in range(n):
        start = time.perf_counter()
        one(proc, "proof, on")
        times.append(time.perf_counter() - start)
    means = (1000 * statistics.mean(times[i : i + 32]) for i in range(0, n, 32))
    print(f"  a new clone, the proof with the replay, ms per check over each 32 of {n}:")
    print("    " + " ".join(f"{m:.1f}" for m in means))


@contextlib.contextmanager
def sources(directory: Path | None) -> Iterator[None]:
    """Builds made meanwhile take their OCaml sources from `directory` (None: this tree's)."""
    saved = hol_build._source_dir, hol_native._source_dir
    if directory is not None:
        hol_build._source_dir = hol_native._source_dir = lambda: directory
    try:
        yield
    finally:
        hol_build._source_dir, hol_native._source_dir = saved


def started(path: str, directory: Path | None) -> tuple[Launcher, WarmProcess, int]:
    with sources(directory):
        launcher = Launcher(native=native_build(DEBIAN_HOL_LIGHT) if path == "native" else None)
        return (launcher, *warm(launcher))


def ab(path: str, base_sources: Path, n: int) -> None:
    """Median wall and mean CPU per request of each kind, the base's against this tree's."""
    sides: dict[str, tuple[Launcher, WarmProcess, int]] = {}
    try:
        sides["base"] = started(path, base_sources)
        sides["this"] = started(path, None)
        print(f"  {'request':<12} {'base: median':>14} {'CPU':>6} {'this: median':>14} {'CPU':>6}")
        for kind in KINDS:
            times: dict[str, list[float]] = {side: [] for side in sides}
            cpu = dict.fromkeys(sides, 0.0)
            for block in range(0, n, 5):
                for side in sorted(sides, reverse=block % 10 == 5):  # each first in turn
                    _, proc, pid = sides[side]
                    before = process_tree_cpu(pid)
                    for _ in range(5):
                        start = time.perf_counter()
                        one(proc, kind)
                        times[side].append(time.perf_counter() - start)
                    cpu[side] += process_tree_cpu(pid) - before
            cells = (
                f"{statistics.median(times[s]) * 1000:14.2f} {cpu[s] / len(times[s]) * 1000:6.2f}"
                for s in ("base", "this")
            )
            print(f"  {kind:<12} " + " ".join(cells))
    finally:
        for launcher, _, _ in sides.values():
            launcher.close()


def cli(native: str, attempts: int, server_each: float | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problems = root / "problems.jsonl"
        problems.write_text(json.dumps({"id": "add_0", "statement": GOAL}) + "\n")
        answers = root / "answers.jsonl"
        answers.write_text((json.dumps({"problem_id": "add_0", "answer": PROOF}) + "\n") * attempts)
        each = cli_rate(problems, answers, root / "run", native, attempts) * 1000
    print(f"  proofeval check, one worker, {attempts} attempts (the store read as it is written):")
    print(f"    one more attempt: {each:.1f} ms  (target <= 10)")
    if server_each is not None:
        print(f"    of which the server ({server_each:.1f} ms, `proof, on` above) and the "
              f"Python side {each - server_each:.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=100)
    parser.add_argument("--attempts", type=int, default=2001)
    parser.add_argument("--mix", type=int, default=200, help="attempts per run of the mix")
    parser.add_argument("--ok-every", type=int, default=10)
    parser.add_argument("--sizes", type=int, default=200, help="attempts of each size each way")
    parser.add_argument("--paths", default="native,bytecode")
    parser.add_argument(
        "--parts", default="phases,mix,cli", help="of phases,mix,sizes,series,ab,cli"
    )
    parser.add_argument("--series", type=int, default=384, help="checks of part series")
    parser.add_argument("--base-sources", type=Path, help="part ab: the base's ocaml directory")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    base = args.base_sources
    if "ab" in parts and not (base and (base / "proofeval_server.ml").is_file()):
        parser.error("part ab needs --base-sources, a directory holding proofeval_server.ml")
    for path in args.paths.split(","):
        print(f"{path}:", flush=True)
        build = native_build(DEBIAN_HOL_LIGHT) if path == "native" else None
        each = None
        if parts & {"phases", "mix", "sizes"}:
            launcher = Launcher(native=build)
            try:
                proc, pid = warm(launcher)
                if "phases" in parts:
                    each = phases(proc, pid, args.round_trips)["proof, on"]["each"]
                if "mix" in parts:
                    mix(proc, pid, args.mix, args.ok_every)
                if "sizes" in parts:
                    sizes(proc, pid, args.sizes)
            finally:
                launcher.close()
        if "series" in parts:
            launcher = Launcher(native=build)
            try:
                series(launcher, args.series)
            finally:
                launcher.close()
        if "ab" in parts:
            ab(path, args.base_sources, args.round_trips)
        if "cli" in parts:
            cli("on" if path == "native" else "off", args.attempts, each)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
