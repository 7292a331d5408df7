"""One warm, sandboxed coqtop with a header loaded, checking attempts one at a time.

Each statement is elaborated once per session by the plugin (`ProofevalStatement`),
before any answer runs. Each attempt is a file the parent writes (the answer's lemmas,
the benchmark's statement, the answer's proof) and hands to the plugin's
`ProofevalCheck`, which judges and runs Coq's own parse of it, decides from Coq's data
and undoes it all (plugin/check.mlg). Its one reply line is framed with a nonce the
parent sends only after the answer has run, and carries the payload in hex.
"""

from __future__ import annotations

import os
import re
import secrets
import selectors
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.files import write_text_atomically
from proofeval.provers.coq import audit
from proofeval.provers.coq.toolchain import HOST_CHAIN, OCAML_RUNTIME, Toolchain
from proofeval.provers.sandbox import stop

START_LIMIT = 120.0  # seconds for coqtop to start
PROBE_LIMIT = 60.0  # seconds for the parent's own queries
# Seconds a client's statement may take to elaborate, inside coqtop (Coq's Timeout stops
# it there and the process serves on); PROBE_LIMIT more before the process is killed.
STATEMENT_LIMIT = 30
OUTPUT_LIMIT = 32 << 20  # bytes an exchange may print
PATH = "/usr/libexec/coq-hammer:/usr/bin:/bin"  # CoqHammer runs its ATPs through htimeout
REPLY = "proofeval-reply"
RESOURCES = "resources exhausted"  # how the plugin says memory or stack ran out


class Timeout(Exception):
    """The wall-clock limit passed; the process has been killed."""


@dataclass
class Report:
    """What the plugin replied about one attempt (check.mlg: a verdict word and its
    reasons), or how the process failed to reply."""

    word: str = ""  # ok, fail, cheating, error, refused, refused-cheating; "": no reply
    reasons: list[str] = field(default_factory=list)
    timed_out: bool = False
    died: str = ""  # the process ended or stopped answering
    seconds: float = 0.0


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096
    sandbox: bool = True
    chain: Toolchain = HOST_CHAIN  # whose coqtop, coqc, coqdep and coqchk run


def coqtop_binary(chain: Toolchain = HOST_CHAIN) -> str:
    return chain.binary("coqtop")


def coq_version(chain: Toolchain = HOST_CHAIN) -> str:
    """The toolchain's Coq version, as `coqc -print-version` gives it ("8.16.1")."""
    return chain.version()


ROCQ9 = re.compile(r"\bFrom\s+(Stdlib|Corelib)\b|\bRequire\s+(Import\s+|Export\s+)?Rocq\b")


NOT_FOUND = re.compile(r"Cannot find a physical path|Cannot find library|Unable to locate library")


def newer_rocq_hint(header: str, error: str, chain: Toolchain = HOST_CHAIN) -> str:
    """Why a header that names Rocq 9's libraries cannot load here, or "": only when what
    failed is a library not found (a header for Rocq 9 may fail for its own reasons)."""
    if not ROCQ9.search(header) or not coq_version(chain).startswith("8."):
        return ""
    if not NOT_FOUND.search(error):
        return ""
    where = "" if chain.home is None else f" in the toolchain {chain.name}"
    return f" (written for Rocq 9; the installed Coq is {coq_version(chain)}{where})"


class CoqSession:
    """A coqtop process in `workdir` (which it sees read-only): start, load a header
    once, then check attempts. Any Timeout or CheckerError leaves it closed."""

    def __init__(self, workdir: Path, limits: Limits, flags: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.limits = limits
        self.flags = list(flags)  # -Q/-R load paths, all under workdir (see Project)
        self._statements: set[str] = set()  # keys the plugin has elaborated
        self._findlib = audit.install_into(workdir, limits.chain)  # seen in the sandbox
        self._proc = self._spawn()
        self._sel = selectors.DefaultSelector()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        for stream in (self._proc.stdout, self._proc.stderr):
            os.set_blocking(stream.fileno(), False)
            self._sel.register(stream, selectors.EVENT_READ)
        _out, err = self._exchange(
            [f'Declare ML Module "{audit.PACKAGE}.plugin".'], time.monotonic() + START_LIMIT
        )
        error = re.search(r"^Error.*", err, re.MULTILINE | re.DOTALL)
        if error is not None:
            self._died(f"the Coq audit plugin does not load: {' '.join(error[0].split())[:300]}")

    # --- the parent's commands ------------------------------------------------------

    def snapshot(self) -> None:
        """Tell the audit that every constant defined now (the header's, the libraries')
        is trusted: call once, after the header is loaded."""
        _out, err = self._exchange(["ProofevalSnapshot."], time.monotonic() + PROBE_LIMIT)
        if re.search(r"^Error", err, re.MULTILINE):
            self._died(f"the audit's snapshot failed: {tail(err)}")

    def _spawn(self) -> subprocess.Popen[bytes]:
        prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        memory = self.limits.memory_mb * 1024 * 1024
        cmd = [prlimit, f"--as={memory}", "--core=0", "--nproc=256", "--"]
        chain = self.limits.chain
        cmd += [coqtop_binary(chain), "-q", "-color", "no", *chain.coq_flags, *self.flags]
        cmd = chain.sandbox(read_only=[self.workdir], sandbox=self.limits.sandbox) + cmd
        findlib = self.workdir / f"ocamlfind_{chain.name}.conf"  # Coq finds plugins so
        path = f"{self._findlib}:{chain.ocaml_path()}"
        # atomically: sessions of one header share the workdir, and a coqtop starting while
        # another session rewrote the file in place read it empty (the plugin "not found")
        write_text_atomically(findlib, f'destdir="{self.workdir}"\npath="{path}"\n')
        env = {"PATH": PATH, "HOME": "/var/tmp", "LANG": "C.UTF-8", **OCAML_RUNTIME}
        env["OCAMLFIND_CONF"] = str(findlib)
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.workdir,
            start_new_session=True,
        )

    def load_file(self, path: Path, limit: float = START_LIMIT) -> str:
        """Load a trusted file (a header); its error, or ""."""
        _out, err = self._exchange([f'Load "{path}".'], time.monotonic() + limit)
        return load_error(err, path)

    def statement(self, key: str, path: Path, limit: int = STATEMENT_LIMIT) -> str:
        """Have the plugin elaborate the statement in `path` as `key`, once per session,
        within `limit` seconds; why it cannot be, or "". Whatever the elaboration did to
        Coq's state is undone (check.mlg); should coqtop not stop it, the process is
        killed."""
        if key in self._statements:
            return ""
        nonce = secrets.token_hex(8)
        command = f'ProofevalStatement "{nonce}" "{key}" "{path}" {limit}.'
        try:
            out, _err = self._exchange([command], time.monotonic() + limit + PROBE_LIMIT)
        except Timeout:
            return f"the statement did not elaborate within {limit} s (coqtop was stopped)"
        word, reasons = framed(out, nonce)
        if word != "ok":
            why = "; ".join(reasons) or "the plugin did not answer"
            if why.startswith(RESOURCES):  # its heap stays grown: later attempts would fail
                self.close()
            return why
        self._statements.add(key)
        return ""

    def check(self, script: str, key: str, timeout: float) -> Report:
        """Have the plugin check `script` against the statement `key` (see statement).
        Timeout: the process is killed."""
        start = time.monotonic()
        path = self.workdir / f"a_{secrets.token_hex(8)}.v"
        path.write_text(script)
        nonce = secrets.token_hex(8)
        try:
            out, _err = self._exchange(
                [f'ProofevalCheck "{nonce}" "{key}" "{path}".'], start + timeout
            )
        finally:
            path.unlink(missing_ok=True)
        word, reasons = framed(out, nonce)
        return Report(word, reasons, seconds=time.monotonic() - start)

    def run_commands(self, commands: list[str], deadline: float) -> tuple[str, str]:
        """Send the parent's own `commands` (proof states, states.py); what stdout and
        stderr said. Timeout: the process is killed."""
        return self._exchange(commands, deadline)

    # --- the channel ----------------------------------------------------------------

    def _exchange(self, commands: list[str], deadline: float) -> tuple[str, str]:
        """Send `commands`, then end markers; what stdout and stderr said before them."""
        mark = f"proofeval_{secrets.token_hex(8)}"
        out_end, err_end = f"{mark}_out", f"{mark}_err"
        text = "\n".join([*commands, f"Locate {mark}_out.", f"Check {mark}_err.", ""])
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(text.encode())
            self._proc.stdin.flush()
        except OSError:
            self._died("coqtop is not running")
        out, err = self._read_until(out_end, err_end, deadline)
        return out[: out.index(out_end)], err[: err.rfind("\n", 0, err.index(err_end))]

    def _read_until(self, out_end: str, err_end: str, deadline: float) -> tuple[str, str]:
        """Read both channels until stdout shows `out_end` and stderr shows `err_end`
        twice (Coq echoes the marker's command, then names it in its error)."""
        assert self._proc.stdout is not None and self._proc.stderr is not None
        out_fd, err_fd = self._proc.stdout.fileno(), self._proc.stderr.fileno()
        data = {out_fd: bytearray(), err_fd: bytearray()}
        seen = {out_fd: 0, err_fd: 0}
        wanted = {out_fd: (out_end.encode(), 1), err_fd: (err_end.encode(), 2)}
        while any(seen[fd] < wanted[fd][1] for fd in data):
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise Timeout()
            for key, _ in self._sel.select(min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    self._died(f"coqtop stopped: {tail(data[err_fd].decode(errors='replace'))}")
                marker = wanted[key.fd][0]
                before = max(0, len(data[key.fd]) - len(marker) + 1)
                data[key.fd] += chunk
                seen[key.fd] += data[key.fd].count(marker, before)
                if len(data[out_fd]) + len(data[err_fd]) > OUTPUT_LIMIT:
                    self._died(f"coqtop printed more than {OUTPUT_LIMIT >> 20} MB")
        return data[out_fd].decode(errors="replace"), data[err_fd].decode(errors="replace")

    def _died(self, why: str) -> None:
        self.close()
        raise CheckerError(why)

    def close(self) -> None:
        stop(self._proc)
        self._sel.close()
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    @property
    def pid(self) -> int:
        """The process started for coqtop: coqtop runs beneath it, in the sandbox."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None


# --- reading what coqtop printed ---------------------------------------------------


def framed(out: str, nonce: str) -> tuple[str, list[str]]:
    """The verdict word and reasons of the plugin's one reply for `nonce`; ("", [why])
    when there is not exactly one."""
    found = re.findall(rf"^{REPLY}:{nonce}:([0-9a-f]*)$", out, re.MULTILINE)
    if len(found) != 1:
        return "", [f"the plugin gave {len(found)} replies"]
    word, *reasons = bytes.fromhex(found[0]).decode(errors="replace").split("\n")
    return word, reasons


def load_error(err: str, path: Path) -> str:
    """The error of `Load "path"`: the `Error:` message after Coq's first echo of that
    command (8.16), or of the error's location in that file (8.20 names the file instead
    of echoing the command), whose file name holds the nonce, up to the next prompt; ""
    when it loaded (warnings, shown the same way, are not errors)."""
    found = [i for i in (err.find(f'Load "{path}".'), err.find(f'File "{path}"')) if i >= 0]
    if not found:
        return ""
    echo = min(found)
    segment = err[echo:]
    prompt = segment.find("\nCoq <")
    segment = segment if prompt < 0 else segment[:prompt]
    error = re.search(r"^Error:", segment, re.MULTILINE)
    if error is None:
        return ""
    lines = segment[error.start() :].split("\n")
    return "\n".join(line for line in lines if not line.startswith(">")).strip()


def tail(text: str, size: int = 300) -> str:
    return " ".join(text.split())[-size:]


# --- a Rocq project's libraries: project.py ----------------------------------------

PROJECT_FILE = "_CoqProject"
