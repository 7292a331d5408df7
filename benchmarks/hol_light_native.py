"""Bytecode against native HOL Light, in one run on the same machine.

For each path, the bytecode toplevel and then the natively compiled build of the same
HOL Light (Debian's, or --hol-light DIR), through the sandboxed server:
1. core start-up: launching to a ready warm process (the native build itself, done
   once and cached, is timed apart when this run had to make it);
2. preparing a context: `needs "Library/iter.ml"` in a fork of the core (natively:
   compiled with an empty cache, then again from the cache);
3. per-attempt overhead: the whole check of a small proof, median wall time: parse and
   deny-check, (native) compile and link, fork, proof, kernel steps, replay, verdict;
4. heavy proofs: the whole check of CPU-heavy proofs (from the core and from
   Library/iter.ml), as the server times it, median of --repeat;
5. with --s2n DIR, a checkout of s2n-bignum that loads in this HOL Light (for Debian's:
   commit d1ef8cfa, arm/ built with `make`, and the line `loadt "update_database.ml";;`
   of arm/proofs/base.ml removed, as it crashes OCaml 4.13): BIGNUM_ADD_CORRECT, with
   arm/proofs/base.ml and its file up to it as the context.

Prints each figure for both paths and bytecode/native.

Usage: python benchmarks/hol_light_native.py [--repeat 3] [--small 20] [--s2n DIR]
About 6 minutes on 2 cores, most of it the bytecode core's start-up.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from proofeval.provers.hol_light.native import NativeBuild, native_build
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher, WarmProcess

SMALL = ("`!n. n + 0 = n`", "ARITH_TAC")
HEAVY = [
    ("`(x + y + z + w) EXP 7 = (w + z + y + x) EXP 7`", "ARITH_TAC"),
    (
        "`(!x y z. P x y /\\ P y z ==> P x z) /\\ (!x y z. Q x y /\\ Q y z ==> Q x z) /\\ "
        "(!x y. Q x y ==> Q y x) /\\ (!x y. P x y \\/ Q x y) ==> (!x y. P x y) \\/ (!x y. Q x y)`",
        "MESON_TAC[]",
    ),
    (
        "`(a pow 2 + b pow 2) * (c pow 2 + d pow 2) = "
        "(a * c - b * d) pow 2 + (a * d + b * c) pow 2`",
        "CONV_TAC REAL_RING",
    ),
]
LIBRARY = "Library/iter.ml"
LIBRARY_PROOFS = ["ORDER_EXISTENCE_CARD", "ORDER_EXISTENCE_FINITE"]
S2N_FILE = "arm/proofs/bignum_add.ml"
S2N_PROOF = "BIGNUM_ADD_CORRECT"


def timed(f: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    value = f()
    return value, time.monotonic() - start


def proofs_of(proc: WarmProcess, path: Path, names: list[str]) -> list[tuple[str, str, str]]:
    """(name, goal, tactic) of the named top-level proofs of `path`, as HOL Light parses it."""
    data = path.read_bytes()
    found = {}
    for phrase in proc.split(path):
        if phrase.kind == "prove" and phrase.name in names and phrase.goal and phrase.tactic:
            text = [data[a:b].decode() for a, b in (phrase.goal, phrase.tactic)]
            found[phrase.name] = (phrase.name, text[0], text[1])
    return [found[n] for n in names]


def check_seconds(proc: WarmProcess, goal: str, proof: str, repeat: int) -> tuple[float, float]:
    """Median server-reported and wall seconds of the whole check (it must be OK)."""
    assert proc.add_goal("g", goal) is None, goal
    server, wall = [], []
    for _ in range(repeat):
        out, seconds = timed(lambda: proc.check("g", proof, 600.0, 8192))
        assert out.verdict.value == "OK", (goal, out)
        server.append(out.seconds)
        wall.append(seconds)
    return statistics.median(server), statistics.median(wall)


def in_context(base: WarmProcess, text: str, directory: str = "") -> tuple[WarmProcess, float]:
    proc = base.clone()
    _, seconds = timed(lambda: proc.load(base.launcher.scratch_file("context", text), directory))
    return proc, seconds


def measure(launcher: Launcher, args: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    base, figures["core start-up (s)"] = timed(launcher.start)
    assert isinstance(base, WarmProcess)
    core = base.clone()
    figures["small proof, whole check (s)"] = check_seconds(core, *SMALL, args.small)[1]
    for goal, tactic in HEAVY:
        figures[f"{tactic} {goal[:30]}... (s)"] = check_seconds(core, goal, tactic, args.repeat)[0]
    library_text = f'needs "{LIBRARY}";;\n'
    if launcher.native is not None:
        _clear_contexts(launcher.native)
    library, figures[f"context {LIBRARY} (s)"] = in_context(base, library_text)
    if launcher.native is not None:
        figures[f"context {LIBRARY}, cached (s)"] = in_context(base, library_text)[1]
    for name, goal, tactic in proofs_of(core, launcher.hol_dir / LIBRARY, LIBRARY_PROOFS):
        figures[f"{name} (s)"] = check_seconds(library, goal, tactic, args.repeat)[0]
    if args.s2n is not None:
        figures.update(_s2n(base, args.s2n))
    return figures


def _s2n(base: WarmProcess, root: Path) -> dict[str, float]:
    """BIGNUM_ADD_CORRECT with everything before it in its file as the context."""
    path = root / S2N_FILE
    phrases = base.split(path)
    proof = next(p for p in phrases if p.kind == "prove" and p.name == S2N_PROOF)
    data = path.read_bytes()
    header = 'loadt "arm/proofs/base.ml";;\n' + data[: proof.start].decode()
    proc, loading = in_context(base, header, str(root))
    assert proof.goal and proof.tactic
    goal, tactic = (data[a:b].decode() for a, b in (proof.goal, proof.tactic))
    return {
        f"context of {S2N_PROOF} (s)": loading,
        f"{S2N_PROOF} (s)": check_seconds(proc, goal, tactic, 1)[0],
    }


def _clear_contexts(native: NativeBuild) -> None:
    shutil.rmtree(native.contexts)
    native.contexts.mkdir()


def run(native: NativeBuild | None, args: argparse.Namespace) -> dict[str, float]:
    read_only = [args.s2n] if args.s2n else []
    launcher = Launcher(args.hol_light, read_only=read_only, native=native)
    try:
        return measure(launcher, args)
    finally:
        launcher.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="checks per heavy proof (median)")
    parser.add_argument("--small", type=int, default=20, help="checks of the small proof")
    parser.add_argument("--hol-light", type=Path, default=DEBIAN_HOL_LIGHT, metavar="DIR")
    parser.add_argument("--s2n", type=Path, metavar="DIR", help="an s2n-bignum checkout")
    parser.add_argument(
        "--rebuild", action="store_true", help="time the native build (with an empty cache)"
    )
    args = parser.parse_args()
    if args.rebuild:
        with tempfile.TemporaryDirectory() as cache:
            import os

            os.environ["XDG_CACHE_HOME"] = cache
            _, build_seconds = timed(lambda: native_build(args.hol_light))
        print(f"native build, once: {build_seconds:.1f} s")
    native = native_build(args.hol_light)
    native_figures = run(native, args)
    bytecode = run(None, args)
    print(f"{'':<52} {'bytecode':>9} {'native':>9} {'ratio':>7}")
    for name, value in native_figures.items():
        before = bytecode.get(name)
        if before is None:
            print(f"{name:<52} {'':>9} {value:9.3f}")
        else:
            print(f"{name:<52} {before:9.3f} {value:9.3f} {before / value:7.1f}x")


if __name__ == "__main__":
    main()
