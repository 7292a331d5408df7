"""Verification-condition benchmarks from annotated C: Frama-C's WP generates the VCs
(with -wp-rte, the runtime-error guards too) and Why3's Coq driver prints them.

Frama-C 25's WP cannot write Coq goals itself (`-wp-prover coq` fails, `-wp-gen -wp-out`
writes nothing), so the VCs are taken where WP hands them to a Why3 prover: a prover
declared in a Why3 configuration with Why3's `coq` driver, whose command copies the task
file (one numbered file each; -wp-par 1 keeps them in WP's order, which WP's log names).
Goals that WP's own simplifier (Qed) discharges never reach a prover and are not
problems. The files are standalone: WP's theories are inlined, only Why3's Coq library is
required. The benchmark is written as `build why3` writes one (why3_vcs.py); ids are
`<file>.<WP goal name>`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tqdm import tqdm

from proofeval.builders import why3_tool, why3_vcs
from proofeval.errors import InputError

COPIER = "ProofevalCopy"
COPIER_SECTION = """
[prover]
name = "{name}"
version = "1"
command = "sh -c 'cp %f {out}/$(ls {out} | wc -l).v; exit 1'"
driver = "coq"
"""
GOAL_LINE = re.compile(rf"^\[wp\] \[{COPIER} 1\] Goal (\S+) :", re.MULTILINE)
LIMIT = 3600.0  # seconds for WP on one file


def build(sources: list[Path], out: Path, categories: dict[str, str]) -> why3_vcs.Built:
    """Write the benchmark of `sources` (.c files) into `out`."""
    if shutil.which("frama-c") is None:
        raise InputError("Frama-C is not installed: run `make install` (frama-c-base)")
    library = why3_tool.coq_library()
    files = why3_vcs.sources_of(sources, ".c")
    built = why3_vcs.Built()
    seen: set[str] = set()
    for source in tqdm(files, desc="WP VCs", unit="file", disable=len(files) < 2):
        try:
            problems = source_problems(source, why3_vcs.category_of(source, categories))
        except InputError as exc:
            built.skipped.append({"source": str(source), "why": str(exc)})
            continue
        if seen & {p["id"] for p in problems}:
            built.skipped.append({"source": str(source), "why": "its ids are already taken"})
            continue
        seen |= {p["id"] for p in problems}
        built.problems += problems
    if not built.problems:
        why = "; ".join(s["why"] for s in built.skipped[:3]) or "WP discharged every goal"
        raise InputError(f"no verification conditions from {len(files)} sources: {why}")
    why3_vcs.write(out, built, library, split_goals=False, complicated=False, generator="frama-c")
    return built


def source_problems(source: Path, category: str) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="proofeval-wp-") as scratch:
        copies = Path(scratch) / "vcs"
        copies.mkdir()
        config = Path(scratch) / "why3.conf"
        section = COPIER_SECTION.format(name=COPIER, out=copies)
        config.write_text(why3_tool.config().read_text() + section)
        log = _run_wp(source, config, Path(scratch))
        goals = GOAL_LINE.findall(log)
        printed = sorted(copies.glob("*.v"), key=lambda f: int(f.stem))
        if len(printed) != len(goals):
            raise InputError(
                f"{source}: WP handed {len(printed)} goals to the printer but its log names "
                f"{len(goals)}: {' '.join(log.split())[-300:]}"
            )
        return [
            {
                "id": f"{source.stem}.{goal}",
                "category": category,
                "source": str(source),
                "module": "",
                "goal": goal,
                "index": 0,
                "number": number,
                "text": why3_vcs.admitted(file.read_text(), source),
            }
            for number, (goal, file) in enumerate(zip(goals, printed, strict=True), 1)
        ]


def _run_wp(source: Path, config: Path, scratch: Path) -> str:
    cmd = ["frama-c", "-wp", "-wp-rte", "-wp-prover", f"{COPIER}:1", "-wp-par", "1",
           "-wp-cache", "none", "-wp-msg-key=prover", str(source.resolve())]  # fmt: skip
    env = os.environ | {"WHY3CONFIG": str(config)}
    try:
        done = subprocess.run(
            cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=LIMIT
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"{source}: Frama-C gave no answer in {LIMIT:.0f} s") from None
    if done.returncode != 0:
        why = " ".join((done.stdout + done.stderr).split())[-400:]
        raise InputError(f"{source}: Frama-C: {why}")
    return done.stdout
