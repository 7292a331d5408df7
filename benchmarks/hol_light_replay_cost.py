"""What the kernel replay behind every HOL Light OK costs, against checking without it.

In one run, on one path (--native auto: native where it can be built, as proofeval's
default), through the sandboxed server, each proof is checked whole (fork, parse check,
proof, kernel steps, replay, verdict) twice: with `--replay off` ("plain": the proof alone)
and with `--replay on` (the default). Printed: the CPU seconds of each (the warm process
and every process it forked for the check: robust on a shared machine; natively not the
answer's parse and compile, done in a fork of the warm parser), their ratio, the
wall seconds of each (attempt start to verdict: the replay now runs beside the writing), and
the peak major heap of the proof without and with the kernel log (measured in a fresh
clone each: `prove` as the attempt's child runs it, then the child with the log, writing
each step as it is made to a forked replaying sibling, and that sibling; GC's top heap,
MiB).

The proofs:
- a chain of N TRANS steps of one equal theorem (N = 10^6, 10^7): the pattern that was
  quadratic when theorems were found in tables keyed by their content;
- the shared-term pattern: N terms of 2^60 paths and 121 nodes, each used twice with
  minor collections between (allocation forces them), so that the log writes each twice
  and the replay must know the second copy as the first (exponential when it compared
  the copies);
- small proofs from the core, and Library/iter.ml's ORDER_EXISTENCE_CARD;
- with --s2n DIR, a checkout of s2n-bignum that loads in this HOL Light (for Debian's:
  commit d1ef8cfa with arm/ built by `make`): functional-correctness proofs of arm/proofs,
  each with arm/proofs/base.ml (its `loadt "update_database.ml"` dropped: it crashes
  OCaml 4.13) and its own file up to the theorem as the context.
Then the median CPU and wall time of one more whole check of a small proof, with and
without the replay (--small checks each), and the wall time per check over --small
checks back to back (a stream of attempts: what the warm process does after a verdict,
such as reaping the attempt's processes, counts there).

With --rounds N, each proof is checked N times each way, the two alternating which goes
first; printed are the medians, and the range of the N wall ratios (a machine shared
with others moves a heavy proof's wall ratio by a third from one check to the next).

Two other parts, each in clones of the proof's context instead of whole checks:
--phases, the CPU seconds of the proof, of the proof writing its steps to a file, and of
replaying that file, one after the other in one process; --walls, the wall seconds of
the proof, of the attempt's child writing its steps to /dev/null, and of the child
writing them to a sibling that replays them as they come (the child's end and the
sibling's), each in a fork, medians over --rounds with the order reversed every other
round.

Usage: python benchmarks/hol_light_replay_cost.py [--s2n DIR] [--only NAME ...]
       [--native on|off|auto] [--rounds N] [--phases | --walls]
Without --s2n about 5 minutes natively on 2 cores; with it, about 20 minutes more.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from proofeval.provers.hol_light.native import choose
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher, WarmProcess

SMALL = ("`!n. n + 0 = n`", "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]")
CHAIN = (
    "`x:num = x`",
    "let r = REFL `x:num` in let th = ref r in "
    "for i = 1 to {n} do th := TRANS !th r done; ACCEPT_TAC !th",
)
SHARED = (
    "`x:num = x`",
    "let plus = `(+):num->num->num` and num = `:num` in "
    "let rec doubled x k = if k = 0 then x else "
    "let s = doubled x (k - 1) in mk_comb (mk_comb (plus, s), s) in "
    "for i = 1 to {n} do "
    'let t = doubled (mk_var ("x" ^ string_of_int i, num)) 60 in let th = REFL t in '
    "ignore (List.init 2000000 (fun i -> i)); ignore (TRANS th (REFL t)) done; "
    "ACCEPT_TAC (REFL `x:num`)",
)
CORE = [
    ("`(P ==> Q) /\\ (Q ==> R) ==> (P ==> R)`", "MESON_TAC[]"),
    ("`12345 * 67890 = 838102050`", "CONV_TAC NUM_REDUCE_CONV"),
    ("`(x + y + z + w) EXP 7 = (w + z + y + x) EXP 7`", "ARITH_TAC"),
    (
        "`(a pow 2 + b pow 2) * (c pow 2 + d pow 2) = "
        "(a * c - b * d) pow 2 + (a * d + b * c) pow 2`",
        "CONV_TAC REAL_RING",
    ),
]
LIBRARY = ("Library/iter.ml", "ORDER_EXISTENCE_CARD")
S2N = [
    ("arm/proofs/bignum_add.ml", "BIGNUM_ADD_CORRECT"),
    ("arm/proofs/bignum_mul_p256k1.ml", "BIGNUM_MUL_P256K1_CORRECT"),
    ("arm/proofs/bignum_montsqr_p256.ml", "BIGNUM_MONTSQR_P256_CORRECT"),
    ("arm/proofs/bignum_montsqr_p256.ml", "BIGNUM_AMONTSQR_P256_CORRECT"),
    ("arm/proofs/bignum_montmul_p256_alt.ml", "BIGNUM_MONTMUL_P256_ALT_CORRECT"),
    # its stream outgrew the writer's buffer mid-record (CHEATING before 65a5487)
    ("arm/proofs/bignum_montmul_p256_alt.ml", "BIGNUM_AMONTMUL_P256_ALT_CORRECT"),
    ("arm/proofs/bignum_mul_6_12.ml", "BIGNUM_MUL_6_12_CORRECT"),
]
UPDATE_DATABASE = 'loadt "update_database.ml";;'
TIMEOUT = 3600.0
MEMORY_MB = 4096  # proofeval's default --memory-limit: every proof must be OK within it
PART = "checks"  # or "phases", "walls"
ROUNDS = 1  # --rounds

# Peak major heap of `prove` in this process, without the kernel log (MiB).
HEAP = """(let g = {goal} and tac () = {tactic} in
  Proofeval_kernel_log.refresh_olds ();
  Proofeval_kernel_log.noting := false;
  let th = prove (g, tac ()) in
  ignore (Sys.opaque_identity th);
  string_of_int ((Gc.quick_stat ()).Gc.top_heap_words * (Sys.word_size / 8) / 1048576))"""

# The same with the log, as a check runs it: this clone is the attempt's child, writing
# each step as the kernel makes it into a pipe to a forked replaying sibling, which reports
# its own peak through a file. Printed: the child's peak and the sibling's.
HEAP_LOG = """(let g = {goal} and tac () = {tactic} in
  Proofeval_kernel_log.refresh_olds ();
  let words () = (Gc.quick_stat ()).Gc.top_heap_words * (Sys.word_size / 8) / 1048576 in
  let file = Filename.temp_file "heap" "" in
  let r, w = Unix.pipe () in
  match Unix.fork () with
  | 0 ->
      Unix.close w;
      let th = Proofeval_replay.replay_from (Unix.in_channel_of_descr r) in
      ignore (Sys.opaque_identity th);
      let oc = open_out file in output_string oc (string_of_int (words ())); close_out oc;
      Unix.kill (Unix.getpid ()) Sys.sigkill; ""
  | pid ->
      Unix.close r;
      let oc = Unix.out_channel_of_descr w in
      Proofeval_kernel_log.record_steps (Some (oc, fun () -> failwith "steps unwritten"));
      let th = prove (g, tac ()) in
      Proofeval_kernel_log.end_steps th;
      Proofeval_kernel_log.recording := false;
      close_out oc;
      let child = words () in
      ignore (Unix.waitpid [] pid);
      let ic = open_in file in let sibling = input_line ic in close_in ic; Sys.remove file;
      string_of_int child ^ " " ^ sibling)"""


# CPU seconds of each part of the line in one process (--phases): the proof without the log,
# with it (writing each step to a file as it is made), replaying the file; and its size.
PHASES = """(let g = {goal} and tac () = {tactic} in
  let time f = let t = Sys.time () in let r = f () in (r, Sys.time () -. t) in
  Proofeval_kernel_log.refresh_olds ();
  Proofeval_kernel_log.noting := false;
  let _, plain = time (fun () -> prove (g, tac ())) in
  let file = Filename.temp_file "steps" "" in
  let oc = open_out_bin file in
  Proofeval_kernel_log.record_steps (Some (oc, fun () -> failwith "steps unwritten"));
  let th, recorded = time (fun () ->
    let th = prove (g, tac ()) in Proofeval_kernel_log.end_steps th; th) in
  Proofeval_kernel_log.recording := false;
  close_out oc;
  let ic = open_in_bin file in
  let size = in_channel_length ic in
  let th', replayed = time (fun () -> Proofeval_replay.replay_from ic) in
  close_in ic; Sys.remove file;
  if dest_thm th' <> dest_thm th then failwith "the replay differs" else
  Printf.sprintf "%.2f %.2f %.2f %.0f" plain recorded replayed (float size /. 1048576.))"""


def phases(proc: WarmProcess, goal: str, tactic: str) -> str:
    clone = proc.clone()
    try:
        return clone.eval_string(PHASES.format(goal=goal, tactic=tactic), TIMEOUT)
    finally:
        clone.close()


# Where a check's wall time goes (--walls), each in a fork of one clone: the proof alone;
# the attempt's child writing its steps to /dev/null; and writing them into a pipe (of the
# server's size) to a sibling that replays them as they come (the child's end, and the
# sibling's, from the child's start). The sibling reports whether it rebuilt the goal.
WALLS = """(let g = {goal} and tac () = {tactic} in
  Proofeval_kernel_log.refresh_olds ();
  let file = Filename.temp_file "walls" "" in
  let in_child f = match Unix.fork () with
    | 0 -> (try f () with _ -> ()); Unix.kill (Unix.getpid ()) Sys.sigkill
    | pid -> ignore (Unix.waitpid [] pid) in
  let wall f = let t = Unix.gettimeofday () in f (); Unix.gettimeofday () -. t in
  let logged oc =
    Proofeval_kernel_log.record_steps (Some (oc, fun () -> failwith "steps unwritten"));
    Proofeval_kernel_log.end_steps (prove (g, tac ())) in
  let write s = let och = open_out file in output_string och s; close_out och in
  let read () = let ich = open_in file in let s = input_line ich in close_in ich; s in
  let plain () = in_child (fun () ->
    Proofeval_kernel_log.noting := false; ignore (prove (g, tac ()))) in
  let to_null () = in_child (fun () -> logged (open_out_bin "/dev/null")) in
  let to_sibling () =
    let r, w = Unix.pipe () in
    Proofeval_server.pipe_size w (1 lsl 20);
    let start = Unix.gettimeofday () in
    let sibling = match Unix.fork () with
      | 0 ->
          Unix.close w;
          (try
            let th = Proofeval_replay.replay_from (Unix.in_channel_of_descr r) in
            if hyp th = [] && aconv (concl th) g then write "replayed"
          with _ -> ());
          Unix.kill (Unix.getpid ()) Sys.sigkill; 0
      | pid -> pid in
    Unix.close r;
    in_child (fun () ->
      logged (Unix.out_channel_of_descr w);
      write (string_of_float (Unix.gettimeofday () -. start)));
    Unix.close w;
    let child = float_of_string (read ()) in
    ignore (Unix.waitpid [] sibling);
    let ended = Unix.gettimeofday () -. start in
    if read () <> "replayed" then failwith "the sibling did not rebuild the goal";
    Printf.sprintf "%f %f" child ended in
  let p = ref 0.0 and n = ref 0.0 and s = ref "" in
  let parts = [ (fun () -> p := wall plain); (fun () -> n := wall to_null);
                (fun () -> s := to_sibling ()) ] in
  List.iter (fun f -> f ()) (if {backwards} then List.rev parts else parts);
  Sys.remove file;
  Printf.sprintf "%f %f %s" !p !n !s)"""


def ratio_range(ratios: list[float]) -> str:
    """The lowest and highest of the rounds' ratios; nothing for one round."""
    ratios = sorted(ratios)
    return f"{ratios[0]:.2f}-{ratios[-1]:.2f}x" if len(ratios) > 1 else ""


def walls(proc: WarmProcess, goal: str, tactic: str) -> str:
    """Medians over ROUNDS rounds of WALLS, each round in the other order."""
    clone = proc.clone()
    try:
        runs = [
            [float(x) for x in clone.eval_string(WALLS.format(
                goal=goal, tactic=tactic, backwards=str(i % 2 == 1).lower()), TIMEOUT).split()]
            for i in range(ROUNDS)
        ]  # fmt: skip
    finally:
        clone.close()
    proof, to_null, child, sibling = (statistics.median(col) for col in zip(*runs, strict=True))

    def spread(i: int) -> str:
        return ratio_range([run[i] / run[0] for run in runs])

    return (
        f"proof {proof:.2f}, child to /dev/null {to_null:.2f} ({to_null / proof:.2f}x {spread(1)}),"
        f" child to its sibling {child:.2f} ({child / proof:.2f}x {spread(2)}), "
        f"the sibling's end {sibling:.2f} ({sibling / proof:.2f}x {spread(3)}, "
        f"{1000 * (sibling - child):.0f} ms after the child)"
    )


# CPU seconds of this warm process and of the children it reaped (an attempt's child, the
# replay's sibling; natively the answer's parse and compile are a fork of the warm parser,
# which is not this process's child, and do not count).
CPU = (
    '(let t = Unix.times () in Printf.sprintf "%.3f" '
    "(t.Unix.tms_utime +. t.Unix.tms_stime +. t.Unix.tms_cutime +. t.Unix.tms_cstime))"
)


def settled_cpu(proc: WarmProcess) -> float:
    """CPU as above once the last check's processes are reaped: the warm process reaps
    them as they end, after its reply, so the count is read until it stops growing."""
    last = float(proc.eval_string(CPU))
    while True:
        time.sleep(0.1)
        now = float(proc.eval_string(CPU))
        if now == last:
            return now
        last = now


def whole_check(proc: WarmProcess, goal_id: str, tactic: str, replay: bool) -> tuple[float, float]:
    """CPU and wall seconds of the whole check (on a shared machine, wall time is not robust)."""
    before = settled_cpu(proc)
    out = proc.check(goal_id, tactic, TIMEOUT, MEMORY_MB, replay)
    assert out.verdict.value == "OK", (goal_id, replay, out)
    return settled_cpu(proc) - before, out.seconds


def back_to_back(proc: WarmProcess, n: int, replay: bool) -> float:
    """Wall seconds per check of the small proof over n in a row, as a stream of attempts
    sees them: everything the warm process does between two verdicts counts."""
    start = time.perf_counter()
    for _ in range(n):
        out = proc.check("small", SMALL[1], TIMEOUT, MEMORY_MB, replay)
        assert out.verdict.value == "OK", out
    return (time.perf_counter() - start) / n


def in_clone(proc: WarmProcess, expr: str) -> str:
    clone = proc.clone()
    try:
        return clone.eval_string(expr, TIMEOUT)
    finally:
        clone.close()


def heaps_mib(proc: WarmProcess, goal: str, tactic: str) -> tuple[int, int, int]:
    """Peak major heap (MiB) of the proof without the log, of the attempt's child with it
    (proof and writing), and of the replaying sibling, each in a fresh clone of `proc`."""
    plain = int(in_clone(proc, HEAP.format(goal=goal, tactic=tactic)))
    child, sibling = in_clone(proc, HEAP_LOG.format(goal=goal, tactic=tactic)).split(" ", 1)
    return plain, int(child), int(sibling)


def row(proc: WarmProcess, name: str, goal: str, tactic: str, heap: bool) -> str:
    """One proof's figures: medians over ROUNDS rounds, each checking it plain and with
    the replay (in turn first), and with several rounds the range of the rounds' wall
    ratios. The checks run in a clone of `proc`, so that the clones measuring the heap
    (forks of `proc`) start from the context alone."""
    if PART == "phases":
        return f"{name[:40]:<40} plain/recorded and written/replay CPU s, steps MiB: " + phases(
            proc, goal, tactic
        )
    if PART == "walls":
        return f"{name[:40]:<40} wall s, medians of {ROUNDS}: " + walls(proc, goal, tactic)
    memory = ""
    if heap:
        memory = " ".join(f"{mib:>8}" for mib in heaps_mib(proc, goal, tactic))
    runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    checker = proc.clone()
    try:
        assert checker.add_goal(name, goal) is None, goal
        for i in range(ROUNDS):
            for replay in (False, True) if i % 2 == 0 else (True, False):
                runs[replay].append(whole_check(checker, name, tactic, replay))
    finally:
        checker.close()
    plain, plain_wall = (statistics.median(col) for col in zip(*runs[False], strict=True))
    replay, replay_wall = (statistics.median(col) for col in zip(*runs[True], strict=True))
    spread = ratio_range([r[1] / p[1] for p, r in zip(runs[False], runs[True], strict=True)])
    spread = f" {spread}" if spread else ""
    return (
        f"{name[:40]:<40} {plain:9.2f} {replay:9.2f} {replay / plain:7.2f}x "
        f"{plain_wall:9.2f} {replay_wall:9.2f} {replay_wall / plain_wall:7.2f}x{spread} {memory}"
    )


def proofs_of(proc: WarmProcess, path: Path, names: list[str]) -> Iterator[tuple[str, str, str]]:
    """(name, goal, tactic) of the named top-level proofs of `path`, as HOL Light parses it."""
    data = path.read_bytes()
    for phrase in proc.split(path):
        if phrase.kind == "prove" and phrase.name in names and phrase.goal and phrase.tactic:
            goal, tactic = (data[a:b].decode() for a, b in (phrase.goal, phrase.tactic))
            yield phrase.name, goal, tactic


def in_context(base: WarmProcess, text: str, directory: str = "") -> WarmProcess:
    proc = base.clone()
    proc.load(base.launcher.scratch_file("context", text), directory)
    return proc


def s2n_rows(base: WarmProcess, root: Path, wanted: set[str] | None, heap: bool) -> Iterator[str]:
    base_ml = (root / "arm/proofs/base.ml").read_text().replace(UPDATE_DATABASE, "")
    started = time.monotonic()
    s2n = in_context(base, base_ml, str(root))
    yield f"(arm/proofs/base.ml loaded in {time.monotonic() - started:.0f} s)"
    for file, name in S2N:
        if wanted and name not in wanted:
            continue
        path = root / file
        phrase = next(p for p in s2n.split(path) if p.kind == "prove" and p.name == name)
        proc = in_context(s2n, path.read_bytes()[: phrase.start].decode(), str(root))
        try:
            for _, goal, tactic in proofs_of(proc, path, [name]):
                yield row(proc, name, goal, tactic, heap)
        finally:
            proc.close()


def rows(base: WarmProcess, args: argparse.Namespace) -> Iterator[str]:
    core = base.clone()
    wanted = set(args.only) if args.only else None
    for n in args.chain:
        name = f"TRANS chain N={n:.0e}"
        if not wanted or name in wanted or "chain" in wanted:
            yield row(core, name, CHAIN[0], CHAIN[1].format(n=n), heap=not args.no_heap)
    if not wanted or "shared" in wanted:
        name = f"shared terms N={args.shared}"
        tactic = SHARED[1].format(n=args.shared)
        yield row(core, name, SHARED[0], tactic, heap=not args.no_heap)
    if not wanted:
        for i, (goal, tactic) in enumerate(CORE):
            yield row(core, f"core {i}: {tactic}", goal, tactic, heap=not args.no_heap)
        library = in_context(base, f'needs "{LIBRARY[0]}";;\n')
        for name, goal, tactic in proofs_of(library, base.launcher.hol_dir / LIBRARY[0],
                                            [LIBRARY[1]]):  # fmt: skip
            yield row(library, name, goal, tactic, heap=not args.no_heap)
    if args.s2n is not None:
        yield from s2n_rows(base, args.s2n, wanted, heap=not args.no_heap)
    if not wanted or "small" in wanted:
        assert core.add_goal("small", SMALL[0]) is None
        for replay in (False, True):
            runs = [whole_check(core, "small", SMALL[1], replay) for _ in range(args.small)]
            cpu, wall = (1000 * statistics.median(col) for col in zip(*runs, strict=True))
            yield (
                f"small proof, whole check, median of {args.small}, replay {replay}: "
                f"{cpu:.0f} ms CPU, {wall:.0f} ms wall"
            )
        for replay in (False, True):
            yield (
                f"small proof, {args.small} checks back to back, replay {replay}: "
                f"{1000 * back_to_back(core, args.small, replay):.1f} ms of wall each"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--s2n", type=Path, metavar="DIR", help="an s2n-bignum checkout")
    parser.add_argument("--native", choices=["auto", "on", "off"], default="auto",
                        help="which HOL Light path (default %(default)s)")  # fmt: skip
    parser.add_argument("--chain", type=int, nargs="*", default=[10**6, 10**7],
                        help="lengths of the TRANS chain (default 10^6 10^7)")  # fmt: skip
    parser.add_argument("--shared", type=int, default=100,
                        help="terms of the shared-term pattern (default 100)")  # fmt: skip
    parser.add_argument(
        "--only", nargs="*", help="only these proofs (names, or `chain`, `shared`, `small`)"
    )
    parser.add_argument("--small", type=int, default=21, help="checks of the small proof")
    parser.add_argument("--no-heap", action="store_true", help="skip the peak-heap runs")
    parser.add_argument("--rounds", type=int, default=1,
                        help="checks of each proof each way, alternating (medians)")  # fmt: skip
    part = parser.add_mutually_exclusive_group()
    part.add_argument(
        "--phases", action="store_true", help="instead: CPU seconds of each part, in one process"
    )
    part.add_argument(
        "--walls",
        action="store_true",
        help="instead: wall seconds of the proof, of the child writing its steps to "
        "/dev/null and to a replaying sibling, and of the sibling's end",
    )
    args = parser.parse_args()
    global PART, ROUNDS
    PART = "phases" if args.phases else "walls" if args.walls else "checks"
    ROUNDS = args.rounds
    native = choose(DEBIAN_HOL_LIGHT, args.native, print)
    read_only = [args.s2n] if args.s2n else []
    launcher = Launcher(DEBIAN_HOL_LIGHT, read_only=read_only, native=native)
    try:
        base = launcher.start()
        path = "native" if native else "bytecode"
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"{path}; load average at start {load}")
        if PART == "checks":
            print("CPU seconds of the whole check; peak major heap of the proof, MiB")
            print(f"{'proof':<40} {'plain':>9} {'replay':>9} {'ratio':>8} {'wall':>9} "
                  f"{'wall':>9} {'ratio':>8} {'heap':>8} {'child':>8} {'replay':>8}")  # fmt: skip
        for line in rows(base, args):
            print(line, flush=True)
    finally:
        launcher.close()


if __name__ == "__main__":
    main()
