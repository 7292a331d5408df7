"""Run prover processes inside bubblewrap: no network, no capabilities, and of the file
system only the system's programs and libraries (/usr), read-only, what the caller names,
and an empty private scratch of bounded size. The rest (/etc, /home, /root, /tmp, the run
directory, a benchmark's references) does not exist inside."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path

from proofeval.errors import InputError

SCRATCH = "/var/tmp"
# Each of the sandbox's two scratch directories (/tmp, and /var/tmp where TMPDIR points)
# is a tmpfs of at most this size: what a process inside writes there is memory, and a
# compiler killed half-way must not be able to fill it without bound.
SCRATCH_BYTES = 1 << 30
# Merged-/usr systems (Debian since 12) have these as links into /usr; others as directories.
TOP_LEVEL_SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _system_binds(system: Path) -> list[str]:
    """/usr and the top-level system links of the root `system` ("/": the host's own)."""
    binds = ["--ro-bind", str(system / "usr"), "/usr"]
    for name in TOP_LEVEL_SYSTEM:
        path = system / name.lstrip("/")
        if path.is_symlink():
            binds += ["--symlink", str(path.readlink()), name]
        elif path.is_dir():
            binds += ["--ro-bind", str(path), name]
    return binds


def bwrap_prefix(
    writable: Iterable[Path] = (),
    read_only: Iterable[Path] = (),
    system: Path = Path("/"),
) -> list[str]:
    """The bwrap command line that wraps a prover: `read_only` paths are shown read-only,
    `writable` ones read-write, each at its own path; nothing else of the host is.
    `system`: the root whose /usr the prover sees (a toolchain's, or the host's).

    The prover is the sandbox's first process (pid 1): bwrap's own process, whose
    descriptors anything inside could otherwise open through /proc/1, stays outside;
    signals from inside cannot stop the prover; and bwrap waits for it, so that its CPU
    time reaches whoever waits for bwrap. (With an init of bwrap's own in between, bwrap
    exits on the init's word without waiting for it, and the CPU of everything that ran
    inside was counted nowhere.) Orphans inside are the prover's to reap; those left when
    it exits are killed with it."""
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
        "--as-pid-1",
        *_system_binds(system),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(SCRATCH_BYTES),
        "--tmpfs",
        "/tmp",
        "--size",
        str(SCRATCH_BYTES),
        "--tmpfs",
        SCRATCH,
        "--setenv",
        "TMPDIR",
        SCRATCH,
    ]
    for path in _outermost(read_only):
        cmd += ["--ro-bind", str(path), str(path)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    # bwrap's root and /dev are tmpfs mounts of no size; only the scratch is written
    return cmd + ["--remount-ro", "/dev", "--remount-ro", "/", "--"]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The absolute paths that exist outside /usr, without those inside another (bwrap
    needs no second bind). A link is bound at its own path, showing what it points to."""
    unique = {p.absolute() for p in paths if p.exists()}
    kept: list[Path] = []
    for path in sorted(unique, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in [Path("/usr"), *kept]):
            kept.append(path)
    return kept


def check_bwrap_works() -> None:
    """Fail with a clear message where user namespaces are not available."""
    done = subprocess.run(bwrap_prefix() + ["true"], capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(
            "bubblewrap cannot create a sandbox here "
            f"({done.stderr.strip() or 'exit ' + str(done.returncode)}); "
            "pass --no-sandbox to check without one"
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process started in its own session, and what it started, and wait for it.
    For a sandbox, innermost first: the prover dies and bwrap reaps it, so its CPU time is
    counted; killing bwrap first would orphan the prover, and its time would be lost."""
    if proc.poll() is not None:
        return
    inside = _children(proc.pid) if _is_bwrap(proc.pid) else []
    for pid in inside:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=5 if inside else 0)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _is_bwrap(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name == "bwrap"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []
