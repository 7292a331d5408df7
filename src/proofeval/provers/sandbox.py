"""Run prover processes inside bubblewrap: no network, read-only system, private scratch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from proofeval.errors import InputError


def bwrap_prefix(writable: list[Path]) -> list[str]:
    """The bwrap command line that wraps a prover; `writable` dirs are bound read-write."""
    binary = shutil.which("bwrap")
    if binary is None:
        raise InputError(
            "bubblewrap (bwrap) is not installed: run `make install`, "
            "or pass --no-sandbox to check without a sandbox"
        )
    cmd = [
        binary,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        # Private scratch; /tmp stays visible read-only, since benchmarks may live there.
        "--tmpfs",
        "/var/tmp",
        "--setenv",
        "TMPDIR",
        "/var/tmp",
    ]
    for d in writable:
        cmd += ["--bind", str(d), str(d)]
    return cmd + ["--"]


def check_bwrap_works() -> None:
    """Fail with a clear message where user namespaces are not available."""
    done = subprocess.run(bwrap_prefix([]) + ["true"], capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(
            "bubblewrap cannot create a sandbox here "
            f"({done.stderr.strip() or 'exit ' + str(done.returncode)}); "
            "pass --no-sandbox to check without one"
        )
