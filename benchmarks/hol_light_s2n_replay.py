"""s2n-bignum's reference proofs with HOL Light's kernel replay off and on, side by side.

Every honest proof that is OK without the replay must be OK with it (issue 45): this
builds the chosen files of a checkout's arm/proofs through proofeval's own path (`proofeval
build hol-light FILES --root DIR --prelude '{group}/proofs/base.ml'`, every theorem a problem:
s2n-bignum-bench's categories without its drops of _SUBROUTINE_CORRECT and the like, unless
--official), then checks every reference proof of those files' own theorems (not base.ml's)
twice with `proofeval check --reference`: `--replay off`, then the default (on; --parallel:
both at once), on the default HOL Light path (native where it can be built). Printed per
file and per theorem: the verdict off and on, the wall seconds of each (attempt start to
verdict, as results.csv has it) and their ratio; then the totals. A theorem whose verdicts
differ is printed again at the end with both messages, and the exit status is 1.

The server reports no CPU per process of an attempt (the child that runs the proof, the
sibling that replays it). What is printed instead is the CPU seconds of each whole `check`
run (every process it reaped: loading the contexts, identical in both runs, and the checks);
for two fresh runs, their difference bounds the replaying siblings' CPU (plus the child's
cost of writing its steps) from above. benchmarks/hol_light_replay_cost.py measures per proof.

The checkout must be one that Debian's HOL Light loads: commit d1ef8cfa with `make
libs2nbignum.a` run in arm/. Its base.ml loads HOL Light's update_database.ml, which
crashes OCaml 4.13: the build reads a copy of the checkout (hard links, under --work) in
which arm/ and x86/'s base.ml have that line commented out; nothing else changes.

Usage: python benchmarks/hol_light_s2n_replay.py --s2n DIR (--sample N | FILE ...)
       [--work DIR] [--workers N] [--timeout S] [--native auto|on|off] [--parallel]
       [--resume] [--official]
--sample N takes the N smallest files of arm/proofs (by size) that state a theorem, other
than base.ml and the files base.ml loads. The 40 smallest (81 theorems) take about an hour
on 2 shared cores (load 4-7); each run loads base.ml once (about 5 minutes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

from proofeval.builders.categories import OFFICIAL_RULES, rules_json

UPDATE_DATABASE = 'loadt "update_database.ml";;'
BASES = ("arm/proofs/base.ml", "x86/proofs/base.ml")
PRELUDE = "{group}/proofs/base.ml"
PROVE = re.compile(r"^let\s+\S+\s*=\s*(time\s+)?prove", re.MULTILINE)
LOADED = re.compile(r'^\s*loadt\s+"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Result:
    verdict: str
    seconds: float
    message: str


MISSING = Result("-", float("nan"), "no result in results.csv")


@dataclass(frozen=True)
class Run:
    results: dict[str, Result]
    wall: float  # of the whole `check` command
    cpu: float  # of every process it reaped

    def of(self, pid: str) -> Result:
        return self.results.get(pid, MISSING)


def shadow(root: Path, work: Path) -> Path:
    """A copy of `root` in hard links (a plain copy across file systems), with each base.ml's
    `loadt "update_database.ml";;` commented out (the line count kept)."""
    copy = work / "s2n"
    if copy.exists():
        shutil.rmtree(copy)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(
        root, copy, copy_function=link, symlinks=True, ignore=shutil.ignore_patterns(".git")
    )
    for base in BASES:
        path = copy / base
        if path.is_file():
            text = path.read_text()
            path.unlink()  # a new file: the checkout's (linked) one stays as it was
            path.write_text(text.replace(UPDATE_DATABASE, f"(* {UPDATE_DATABASE} *)"))
    return copy


def sample(root: Path, n: int) -> list[str]:
    """The n smallest files of arm/proofs that state a theorem, other than base.ml and the
    files it loads."""
    base = (root / BASES[0]).read_text()
    excluded = {BASES[0], *LOADED.findall(base)}
    files = sorted((root / "arm/proofs").glob("*.ml"), key=lambda p: (p.stat().st_size, p.name))
    chosen = []
    for path in files:
        rel = str(path.relative_to(root))
        if rel not in excluded and PROVE.search(path.read_text(errors="replace")):
            chosen.append(rel)
    return chosen[:n]


def proofeval(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "proofeval"
    return [str(exe) if exe.exists() else "proofeval", *args]


def every_theorem(work: Path) -> Path:
    """s2n-bignum-bench's categories without its drops (of _SUBROUTINE_CORRECT, _EQUIV and
    _SUBROUTINE_SAFE theorems): every theorem is a problem."""
    path = work / "categories.json"
    path.write_text(json.dumps([r for r in rules_json(OFFICIAL_RULES) if "drop" not in r]))
    return path


def build(root: Path, files: list[str], out: Path, categories: Path | None) -> None:
    cmd = proofeval(
        "build", "hol-light", *(str(root / f) for f in files), "--root", str(root),
        "--prelude", PRELUDE, "--out", str(out), "--no-setup-files",
        *(["--categories", str(categories)] if categories else []),
    )  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"build failed:\n{done.stdout}{done.stderr}")
    print((done.stdout + done.stderr).strip(), flush=True)


def own_theorems(bench: Path, root: Path, files: list[str]) -> dict[str, list[str]]:
    """Each file's own problems, in the order of the file."""
    problems = json.loads((bench / "problems.json").read_text())
    wanted = {str((root / f).resolve()): f for f in files}
    by_file: dict[str, list[tuple[int, str]]] = {f: [] for f in files}
    for pid, entry in problems.items():
        source = str(Path(entry["json"]["filename"]).resolve())
        if source in wanted:
            line = int(entry["json"]["toplevel_theorem_linenum_start"])
            by_file[wanted[source]].append((line, pid))
    return {f: [pid for _, pid in sorted(found)] for f, found in by_file.items()}


def start(bench: Path, only: Path, out: Path, replay: str, args: argparse.Namespace) -> Popen:
    """`proofeval check` of the reference proofs into `out`; a fresh run unless --resume."""
    if out.exists() and not args.resume:
        shutil.rmtree(out)
    cmd = proofeval(
        "check", str(bench), "--reference", "--only", f"@{only}", "--out", str(out),
        "--replay", replay, "--workers", str(args.workers), "--timeout", str(args.timeout),
        "--native", args.native,
    )  # fmt: skip
    log = (out.parent / f"{out.name}.log").open("w")
    return Popen(cmd, stdout=log, stderr=log)


def finish(proc: Popen, started: float, out: Path) -> Run:
    """Wait for the run: its wall time and the CPU of every process it reaped."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    results = read_results(out / "results.csv")
    if not results:
        sys.exit(f"{out}: no results (see {out}.log)")
    return Run(results, wall, usage.ru_utime + usage.ru_stime)


def check(bench: Path, only: Path, work: Path, args: argparse.Namespace) -> tuple[Run, Run]:
    """The run with the replay off, then on (--parallel: both at once)."""
    runs = []
    procs: list[tuple[Popen, float, Path]] = []
    for replay in ("off", "on"):
        out = work / f"run-{replay}"
        procs.append((start(bench, only, out, replay, args), time.perf_counter(), out))
        if not args.parallel:
            runs.append(finish(*procs.pop()))
            print(f"(replay {replay}: {runs[-1].wall:.0f} s)", flush=True)
    runs.extend(finish(*p) for p in procs)
    return runs[0], runs[1]


def read_results(path: Path) -> dict[str, Result]:
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {
        r["problem_id"]: Result(r["verdict"], float(r["seconds"] or "nan"), r["message"])
        for r in rows
    }


def ratio(on: float, off: float) -> str:
    return f"{on / off:6.2f}x" if off > 0 else "     -"


def side_by_side(by_file: dict[str, list[str]], off: Run, on: Run) -> list[str]:
    """Print the table; the problems whose verdicts differ."""
    differ = []
    print(f"{'theorem':<52} {'off':>8} {'on':>8} {'wall off':>9} {'wall on':>9} {'ratio':>7}")
    for file, pids in by_file.items():
        a = sum(off.of(p).seconds for p in pids)
        b = sum(on.of(p).seconds for p in pids)
        print(f"{file}: {len(pids)} theorems, wall {a:.2f} s off, {b:.2f} s on, {ratio(b, a)}")
        for pid in pids:
            x, y = off.of(pid), on.of(pid)
            mark = "" if x.verdict == y.verdict else "   <<< VERDICTS DIFFER"
            name = pid.split(".", 2)[-1]
            print(
                f"  {name[:50]:<50} {x.verdict:>8} {y.verdict:>8} {x.seconds:9.2f} "
                f"{y.seconds:9.2f} {ratio(y.seconds, x.seconds)}{mark}"
            )
            if mark:
                differ.append(pid)
    return differ


def totals(by_file: dict[str, list[str]], off: Run, on: Run, differ: list[str]) -> None:
    pids = [p for ps in by_file.values() for p in ps]
    both_ok = [p for p in pids if off.of(p).verdict == on.of(p).verdict == "OK"]
    counts: dict[tuple[str, str], int] = {}
    for p in pids:
        key = (off.of(p).verdict, on.of(p).verdict)
        counts[key] = counts.get(key, 0) + 1
    a = sum(off.of(p).seconds for p in both_ok)
    b = sum(on.of(p).seconds for p in both_ok)
    print()
    print(f"{len(by_file)} files, {len(pids)} theorems; verdicts (off/on): "
          + ", ".join(f"{k[0]}/{k[1]} {n}" for k, n in sorted(counts.items())))  # fmt: skip
    print(f"wall of the OK/OK proofs: {a:.1f} s off, {b:.1f} s on, {ratio(b, a)}")
    print(
        f"whole `check` runs: wall {off.wall:.0f} s off, {on.wall:.0f} s on; CPU of every "
        f"process reaped {off.cpu:.0f} s off, {on.cpu:.0f} s on (difference "
        f"{on.cpu - off.cpu:.0f} s: the replaying siblings and the writing of the steps, at most)"
    )
    if differ:
        print(f"\n!!! {len(differ)} theorem(s) with verdicts that differ:")
        for p in differ:
            x, y = off.of(p), on.of(p)
            print(f"!!! {p}\n    off: {x.verdict} {x.message}\n    on:  {y.verdict} {y.message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="files under DIR (arm/proofs/X.ml)")
    parser.add_argument("--s2n", type=Path, required=True, metavar="DIR", help="the checkout")
    parser.add_argument("--sample", type=int, metavar="N", help="the N smallest files instead")
    parser.add_argument("--work", type=Path, help="where to build and run (default: a temp dir)")
    parser.add_argument("--workers", type=int, default=1, help="default %(default)s")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per attempt")
    parser.add_argument("--native", choices=["auto", "on", "off"], default="auto")
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="run the two checks at once (each slows the other: wall ratios are rougher)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the verdicts of earlier runs in --work"
    )
    parser.add_argument(
        "--official",
        action="store_true",
        help="only s2n-bignum-bench's problems (default: every theorem of the files)",
    )
    args = parser.parse_args()
    root = args.s2n.resolve()
    files = sample(root, args.sample) if args.sample else args.files
    if not files:
        parser.error("give files or --sample N")
    work = (args.work or Path(tempfile.mkdtemp(prefix="s2n-replay-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{len(files)} files: {' '.join(Path(f).stem for f in files)}")
    print(f"work {work}; load average at start {load}", flush=True)
    copy, bench = work / "s2n", work / "bench"
    if not (args.resume and bench.is_dir()):  # --resume: the copy and the build as they are
        copy = shadow(root, work)
        build(copy, files, bench, None if args.official else every_theorem(work))
    by_file = own_theorems(bench, copy, files)
    only = work / "only.txt"
    only.write_text("".join(p + "\n" for ps in by_file.values() for p in ps))
    off, on = check(bench, only, work, args)
    print(flush=True)
    differ = side_by_side(by_file, off, on)
    totals(by_file, off, on, differ)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
