"""The second line behind every Coq OK (on unless --replay off): the attempt compiled as
a whole file by a fresh coqc, the way Coq compiles any file (no warm state, no runner of
proofeval's: the judge's and runner's faults, and anything left behind in the warm
coqtop, cannot reach it), with the plugin deciding again from Coq's own data at the end
(`ProofevalVerdict`: kernel name, type, what the answer added); with --coqchk, coqchk,
Coq's independent kernel checker, then re-checks the compiled library. A disagreement is
CHEATING. Read: the plugin's framed reply and the exit statuses; text only for messages."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from proofeval.provers.coq import audit
from proofeval.provers.coq.session import STATEMENT_LIMIT, Limits, framed
from proofeval.provers.coq.toolchain import OCAML_RUNTIME

# Beyond the attempt's own limit, for coqc's loading of the header (the warm process had
# it loaded): each of coqc and coqchk gets the attempt's limit plus this.
HEADER_ALLOWANCE = 60.0


def recheck(
    workdir: Path, header: str, statement: str, text: str, limits: Limits,
    timeout: float, flags: Sequence[str] = (), coqchk: bool = False,
) -> str | None:  # fmt: skip
    """None when a fresh coqc of header + `text` ends with the plugin's ok (and, with
    `coqchk`, coqchk accepts the compiled file); else why not. `statement`: the
    benchmark's statement sentence; `timeout`: the attempt's limit; `flags`: the
    session's -Q/-R load paths (a project's library, in workdir)."""
    limit = timeout + HEADER_ALLOWANCE
    where = workdir / f"chk_{secrets.token_hex(8)}"
    where.mkdir()
    first, last = secrets.token_hex(8), secrets.token_hex(8)
    try:
        (where / "Statement.v").write_text(statement + "\n")
        plugin = [
            f'Declare ML Module "{audit.PACKAGE}.plugin".',
            "ProofevalSnapshot.",
            f'ProofevalStatement "{first}" "s" "{where / "Statement.v"}" {STATEMENT_LIMIT}.',
        ]
        verdict = f'ProofevalVerdict "{last}" "s".'
        (where / "Attempt.v").write_text("\n".join([header, *plugin, text, verdict, ""]))
        findlib = audit.install_into(workdir, limits.chain)
        (where / "ocamlfind.conf").write_text(f'path="{findlib}:{limits.chain.ocaml_path()}"\n')
        paths = [*flags, "-Q", ".", "Proofeval"]
        coqc = ["coqc", "-q", *limits.chain.coq_flags, *paths, "Attempt.v"]
        done, failed = _run(where, workdir, limits, coqc, limit)
        word, reasons = framed(done, last)
        if failed is not None or word != "ok":
            why = "; ".join(reasons) if word else failed
            return f"a fresh coqc of the attempt says {word or 'nothing'}: {why}"
        if not coqchk:
            return None
        coqchk_command = ["coqchk", "-silent", *paths, "-norec", "Proofeval.Attempt"]
        _, failed = _run(where, workdir, limits, coqchk_command, limit)
        return None if failed is None else f"coqchk: {failed}"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _run(
    where: Path, workdir: Path, limits: Limits, command: list[str], limit: float
) -> tuple[str, str | None]:
    """What `command` printed on stdout, and why it failed (None when it exited 0)."""
    memory = limits.memory_mb * 1024 * 1024
    cmd = ["prlimit", f"--as={memory}", "--core=0", "--", *command]
    cmd = limits.chain.sandbox([where], [workdir], limits.sandbox) + cmd
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8", **OCAML_RUNTIME}
    env["OCAMLFIND_CONF"] = str(where / "ocamlfind.conf")
    try:
        done = subprocess.run(
            cmd, cwd=where, env=env, capture_output=True, text=True, timeout=limit
        )
    except subprocess.TimeoutExpired:
        return "", f"no answer in {limit:.0f} s"
    if done.returncode == 0:
        return done.stdout, None
    why = " ".join((done.stderr or done.stdout).split())[-300:] or f"exit {done.returncode}"
    return done.stdout, why
