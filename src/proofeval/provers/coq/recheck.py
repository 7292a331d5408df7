"""--coqchk: compile an attempt that Coq accepted as a whole file with coqc, then have
coqchk (Coq's independent kernel checker) check the compiled library. Only exit statuses
are read."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from proofeval.provers.coq.session import Limits
from proofeval.provers.coq.toolchain import OCAML_RUNTIME

LIMIT = 600.0  # seconds for each of coqc and coqchk


def recheck(
    workdir: Path, header: str, text: str, limits: Limits, flags: Sequence[str] = ()
) -> str | None:
    """None when coqc compiles header + `text` and coqchk accepts it; else why not.
    `flags`: the session's -Q/-R load paths (a project's compiled library, in workdir)."""
    where = workdir / f"chk_{secrets.token_hex(8)}"
    where.mkdir()
    try:
        (where / "Attempt.v").write_text(f"{header}\n{text}")
        (where / "ocamlfind.conf").write_text(f'path="{limits.chain.ocaml_path()}"\n')
        paths = [*flags, "-Q", ".", "Proofeval"]
        coqc = ["coqc", "-q", *limits.chain.coq_flags, *paths, "Attempt.v"]
        compiled = _run(where, workdir, limits, coqc)
        if compiled is not None:
            return f"coqc: {compiled}"
        checked = _run(where, workdir, limits,
                       ["coqchk", "-silent", *paths, "-norec", "Proofeval.Attempt"])  # fmt: skip
        return None if checked is None else f"coqchk: {checked}"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _run(where: Path, workdir: Path, limits: Limits, command: list[str]) -> str | None:
    memory = limits.memory_mb * 1024 * 1024
    cmd = ["prlimit", f"--as={memory}", "--core=0", "--", *command]
    cmd = limits.chain.sandbox([where], [workdir], limits.sandbox) + cmd
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8", **OCAML_RUNTIME}
    env["OCAMLFIND_CONF"] = str(where / "ocamlfind.conf")
    try:
        done = subprocess.run(
            cmd, cwd=where, env=env, capture_output=True, text=True, timeout=LIMIT
        )
    except subprocess.TimeoutExpired:
        return f"no answer in {LIMIT:.0f} s"
    if done.returncode == 0:
        return None
    return " ".join((done.stderr or done.stdout).split())[-300:] or f"exit {done.returncode}"
