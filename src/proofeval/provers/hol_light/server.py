"""Talk to warm HOL Light processes: start the first one, clone more, send requests.

One `Launcher` owns a sandbox with a HOL Light toplevel that has loaded the core (the
base). Every other warm process is a fork of a warm process (`Launcher.clone`), so the
core is loaded once per launcher. Each process serves one Unix socket connection; the
framing is the one in proofeval_server.ml.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from proofeval.errors import CheckerError, InputError
from proofeval.model import Outcome, Stage, Verdict
from proofeval.provers.hol_light.build import (
    KERNEL,
    build_dir,
    findlib_environment,
    hol_text,
    unlimited_stack,
)
from proofeval.provers.hol_light.protocol import TOO_OLD, Connection, Phrase
from proofeval.provers.sandbox import SCRATCH, bwrap_prefix, check_bwrap_works, stop

if TYPE_CHECKING:
    from proofeval.provers.hol_light.native import NativeBuild
    from proofeval.provers.interface import CheckSettings

DEBIAN_HOL_LIGHT = Path("/usr/share/hol-light")
BOOT_LIMIT = 3600.0  # seconds to load the HOL Light core before giving up
# What parsing one statement may spend (seconds, MiB of address space, the context's
# included): a statement is parsed in a confined child of the context's process.
STATEMENT_LIMITS = (60.0, 4096)


def ocaml_string(text: str) -> str:
    """An OCaml string literal of `text`, every byte but plain ones escaped."""
    plain = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-$+ "
    return '"' + "".join(chr(b) if b in plain else f"\\{b:03d}" for b in text.encode()) + '"'


def quoted_term(statement: str) -> str | None:
    """The text of the one term a statement quotes in backquotes, or None when it is not
    one quoted term (then HOL Light refuses it: a statement is never code). The rule is
    proofeval_text.ml's `quoted_term`; this copy only lets the builder drop such goals."""
    text = statement.strip(" \x0c\n\r\t")  # what OCaml's String.trim removes
    inner = text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "`" and "`" not in inner:
        return inner
    return None


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


def _span(a: str, b: str) -> tuple[int, int] | None:
    return None if a == "-1" else (int(a), int(b))


class WarmProcess:
    """A HOL Light process with some context loaded, ready to check attempts.

    On the native path it also knows what answers must open (the core's module, then
    each context's, in order) and which files its contexts loaded (for `needs`)."""

    def __init__(self, launcher: Launcher, conn: Connection, parent: WarmProcess | None = None):
        self.launcher = launcher
        self.conn = conn
        native = launcher.native
        self.opened: list[str] = parent.opened[:] if parent else ["Proofeval_hol_core"]
        self.loaded_ids: frozenset[tuple[str, str]] = (
            parent.loaded_ids if parent else native.core_ids if native else frozenset()
        )
        self._lock = threading.Lock()  # one request at a time: a template has many users

    def _request(self, fields: list[str], timeout: float) -> list[str]:
        """The reply to a request, never empty; CheckerError if there is none."""
        try:
            with self._lock:
                reply = self.conn.request(fields, timeout)
        except CheckerError as exc:
            tail = self.launcher.log_tail()
            raise CheckerError(f"{exc} (pid {self.conn.pid}; log: ...{tail})") from exc
        if not reply:
            raise CheckerError(f"empty reply from HOL Light to {fields[0]}")
        return reply

    def load(
        self,
        path: Path,
        directory: str,
        timeout: float | None = None,
        memory_mb: int | None = None,
    ) -> None:
        """Load a context (code: perhaps a client's header) into this process, which
        nothing else forks from before it has loaded. `memory_mb`: its address space
        is bounded by that for good (give the attempts' limit: no attempt of the
        context could run above it). A load that fails or outlasts `timeout` (or
        BOOT_LIMIT) has this process killed with whatever it started."""
        if directory and not self.launcher.can_see(Path(directory)):
            raise CheckerError(
                f"the context's directory {directory} is not visible in this HOL Light's "
                "sandbox (it was started for other problems)"
            )
        if self.launcher.native is not None:
            try:
                path = self._compiled_context(path, directory)
            except InputError as exc:  # a file it loads is missing: say which, as below
                why = self._missing_load(path) or str(exc)
                raise CheckerError(f"the context failed to load: {why}") from None
            except CheckerError as exc:
                hint = "--native off loads it in the bytecode toplevel instead"
                raise CheckerError(f"the context failed to load: {exc} ({hint})") from None
        memory = "" if memory_mb is None else str(memory_mb)
        try:
            reply = self._request(["load", directory, str(path), memory], timeout or BOOT_LIMIT)
        except CheckerError:
            self.launcher.kill(self)
            raise
        if reply[0] == "ok" and self.launcher.native is not None:
            self.opened.append(path.stem.capitalize())
        if reply[0] != "ok":
            why = self._missing_load(path) if "Not_found" in reply[-1] else None
            raise CheckerError(f"the context failed to load: {why or reply[-1]}")

    def _compiled_context(self, path: Path, directory: str) -> Path:
        """Compile the context file `path` natively for this process: its loads inlined as
        HOL Light would load them here (`needs` of a file loaded already is skipped)."""
        from proofeval.provers.hol_light.native import compile_context
        from proofeval.provers.hol_light.sources import Inliner, LoadPath, file_id

        native = self.launcher.native
        assert native is not None
        root = Path(directory) if directory else self.launcher.workdir
        load_path = LoadPath(root, self.launcher.hol_dir.resolve())
        inliner = Inliner(self.split, load_path, self.loaded_ids, self.launcher.can_see)
        inlined = inliner.inline(path)
        plugin = compile_context(native, inlined.text, self.opened)
        self.loaded_ids = self.loaded_ids | {file_id(f) for f in inlined.files}
        return plugin

    def _missing_load(self, path: Path) -> str | None:
        """The first file that `path` loads and HOL Light cannot find (HOL Light itself
        says only Not_found), as a message; None if there is none."""
        try:
            loads = [p for p in self.split(path) if p.kind == "load"]
            missing = next((p for p in loads if not self._finds(p.name, p.arg)), None)
        except (InputError, CheckerError):  # then the original message is all there is
            return None
        if missing is None:
            return None
        return (
            f'{missing.name} "{missing.arg}": no such file in the sources or in HOL Light '
            f"({self.launcher.hol_dir}); {TOO_OLD}"
        )

    def _finds(self, function: str, name: str) -> bool:
        """Whether HOL Light's `function` (needs, loadt, loads) finds the file `name`."""
        path = '["$"]' if function == "loads" else "!load_path"
        expr = f'try ignore (file_on_path {path} {ocaml_string(name)}); "yes" with _ -> "no"'
        return self.eval_string(f"({expr})") == "yes"

    def add_goal(
        self, goal_id: str, statement: str, limits: tuple[float, int] = STATEMENT_LIMITS
    ) -> str | None:
        """Register a statement, the text of one term in backquotes (never code: it is
        parsed by HOL Light's parser in a confined child within `limits`, seconds and
        MiB); the reason it is unusable, or None."""
        timeout, memory_mb = limits
        fields = ["goal", goal_id, statement, repr(float(timeout)), str(memory_mb)]
        reply = self._request(fields, timeout + 60.0)
        return None if reply[0] == "ok" else reply[-1]

    def check(
        self, goal_id: str, proof: str, timeout: float, memory_mb: int, replay: bool = True
    ) -> Outcome:
        """Check `proof`; `replay`: an OK's kernel steps are replayed in a clean sibling
        (the second line, with a time budget of its own), else OK is the child's word."""
        fields = ["check", goal_id, repr(float(timeout)), str(memory_mb), proof, _on_off(replay)]
        reply = self._request(fields, (2 if replay else 1) * timeout + 60.0)
        try:
            kind, verdict, stage, message, seconds = reply
            spent = float(seconds)
            if kind != "verdict" or not 0.0 <= spent < math.inf:
                raise ValueError(kind)
            return Outcome(Verdict(verdict), Stage(stage), spent, message)
        except ValueError:  # any other shape, verdict, stage or number
            raise CheckerError(f"unexpected reply from HOL Light: {reply[:5]}") from None

    def eval_string(self, expr: str, timeout: float = 600.0) -> str:
        """Evaluate a trusted expression of type string (proofeval's own code, never an
        answer: it is not deny-checked)."""
        reply = self._request(["eval", expr], timeout)
        if reply[0] != "ok" or len(reply) != 2:
            raise CheckerError(f"evaluation failed: {reply[-1]}")
        return reply[1]

    def split(self, path: Path) -> list[Phrase]:
        """The top-level phrases of a source file, parsed (not run) by HOL Light. It parses
        a copy in the work directory: the sandbox shows it nothing of the user's."""
        try:
            copy = self.launcher.scratch_file("split", path.read_bytes())
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror}") from None
        try:
            reply = self._request(["split", str(copy)], 600.0)
        finally:
            copy.unlink()
        if reply[0] != "ok":  # the file cannot be read or parsed: the user's input
            line, why = reply[1:] if len(reply) == 3 else ("0", reply[-1])
            raise InputError(f"{path}:{line}: {why}" if line != "0" else f"{path}: {why}")
        fields = reply[1:]
        try:
            if len(fields) % 9:
                raise ValueError(len(fields))
            return [
                Phrase(int(f[0]), int(f[1]), f[2], f[3], f[4], _span(f[5], f[6]), _span(f[7], f[8]))
                for f in (fields[i : i + 9] for i in range(0, len(fields), 9))
            ]
        except ValueError:
            raise CheckerError(f"unexpected reply from HOL Light to split: {fields[:9]}") from None

    def clone(self) -> WarmProcess:
        return self.launcher.clone(self)

    def state_request(self, fields: list[str], timeout: float) -> list[str]:
        """A proof-state request (proofeval_states.ml; see states.py) and its reply."""
        return self._request(fields, timeout)

    def close(self) -> None:
        self.conn.close()


# --- Which HOL Light: Debian's, or a source tree built by `make` ---------------------------


def toplevel_command(hol_dir: Path) -> list[str]:
    """The toplevel of a HOL Light directory and its arguments, before the script to run.

    Debian's `ocaml` has camlp5 and pa_j built in. A source tree (github jrh13/hol-light)
    after `make` has `ocaml-hol` and `pa_j.cmo`, and runs as the hol.sh that `make` writes:
    from hol_4.14.sh for OCaml >= 4.14 (hol.ml loads camlp5 through findlib), else from
    hol_4.sh (camlp5 loaded on the command line)."""
    if (hol_dir / "hol.ml").is_file():
        if (hol_dir / "ocaml").is_file():
            _same_ocaml(hol_dir / "ocaml")
            return [str(hol_dir / "ocaml")]
        if (hol_dir / "ocaml-hol").is_file() and (hol_dir / "pa_j.cmo").is_file():
            return _source_tree_command(hol_dir)
    raise InputError(_not_hol_light(hol_dir))


def _source_tree_command(hol_dir: Path) -> list[str]:
    toplevel = hol_dir / "ocaml-hol"
    if _same_ocaml(toplevel) >= (4, 14):
        return [str(toplevel), "-I", str(hol_dir)]
    camlp5 = _output(["camlp5", "-where"])
    return [str(toplevel), "-I", camlp5, "camlp5o.cma", "-safe-string", "-I", str(hol_dir)]


def _not_hol_light(hol_dir: Path) -> str:
    if hol_dir == DEBIAN_HOL_LIGHT:
        return (
            f"HOL Light is not installed ({hol_dir} has no hol.ml and toplevel `ocaml`): "
            "run `make install` (Debian packages hol-light and libnum-ocaml-dev) "
            "or pass --hol-light DIR"
        )
    if not hol_dir.is_dir():
        return f"{hol_dir}: no such HOL Light directory"
    hint = "; it has hol.ml: run `make` in it" if (hol_dir / "hol.ml").is_file() else ""
    return (
        f"{hol_dir} is not a HOL Light directory: expected hol.ml and either Debian's toplevel "
        f"`ocaml` or, in a source tree built by `make`, ocaml-hol and pa_j.cmo{hint}"
    )


def _same_ocaml(toplevel: Path) -> tuple[int, ...]:
    """The (major, minor) OCaml version of `toplevel`. The checker's module is compiled by
    `ocamlc` and loaded into the toplevel, so both must be the same OCaml."""
    theirs = _output([str(toplevel), "-vnum"])
    ours = _output(["ocamlc", "-version"])
    if theirs != ours:
        raise InputError(
            f"{toplevel} is OCaml {theirs} but ocamlc is OCaml {ours}: the checker is compiled "
            "with ocamlc and loaded into HOL Light; put the ocamlc of HOL Light's OCaml first "
            "on PATH (for an opam switch: eval $(opam env --switch=SWITCH))"
        )
    return tuple(int(n) for n in re.findall(r"\d+", theirs)[:2])


def _output(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"cannot run `{' '.join(cmd)}`: {exc}") from None
    return done.stdout.strip()


def hol_light_paths(hol_dir: Path) -> list[Path]:
    """What HOL Light reads: its directory, and where the directory's symlinks point."""
    return [hol_dir, *(entry.resolve() for entry in hol_dir.iterdir() if entry.is_symlink())]


def ocaml_paths() -> list[Path]:
    """Where OCaml and camlp5 live, which the toplevel reads (outside /usr in an opam
    switch that built a user's HOL Light)."""
    paths = [Path(shutil.which("ocamlrun") or "/usr/bin/ocamlrun").parent]
    for cmd in (["ocamlc", "-where"], ["camlp5", "-where"]):
        if shutil.which(cmd[0]):
            paths.append(Path(_output(cmd)))
    return paths


WORKDIR_PREFIX = "proofeval-hol-"


def remove_abandoned_workdirs() -> None:
    """Remove the work directories (about 0.3 MB each) of launchers whose process is gone:
    one killed with SIGKILL never reaches close()."""
    for workdir in Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"):
        try:
            owner = int((workdir / "owner").read_text())
        except (OSError, ValueError):  # another user's, or one being created
            continue
        if not _alive(owner):
            shutil.rmtree(workdir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        return True
    return True


def start_script(home: Path, build: Path) -> str:
    """HOL Light's hol.ml with the kernel log loaded right after the kernel, so that every
    theorem made later is noted, then the replay, the proof states' goals and the server."""
    hol = hol_text(home)
    if hol.count(KERNEL) != 1:
        raise InputError(
            f"{home / 'hol.ml'} does not load its kernel with `{KERNEL}` exactly once: "
            "proofeval cannot log the kernel's steps in this HOL Light"
        )
    log = (
        f'#directory "{build}";;\n#load "proofeval_identity.cma";;\n'
        f'#use "{build / "proofeval_kernel_log.ml"}";;'
    )
    logged = hol.replace(KERNEL, f"{KERNEL}\n{log}")
    after = [build / "proofeval_replay.ml", build / "proofeval_goals.ml", build / "boot.ml"]
    uses = "".join(f'#use "{path}";;\n' for path in after)
    return f"{logged}\n{uses}"


class Launcher:
    """Starts the sandboxed base process and hands out clones of warm processes."""

    def __init__(
        self,
        hol_dir: Path = DEBIAN_HOL_LIGHT,
        sandbox: bool = True,
        on_wait: Callable[[float], None] | None = None,
        read_only: Iterable[Path] = (),
        native: NativeBuild | None = None,
    ) -> None:
        """`read_only`: what HOL Light must read besides itself and the contexts
        proofeval hands it (a development's root, directories contexts load from).
        `native`: run that natively compiled HOL Light instead of the toplevel."""
        self.hol_dir = hol_dir
        self.native = native
        self.sandbox = sandbox
        self.on_wait = on_wait
        self.read_only = list(read_only)
        remove_abandoned_workdirs()
        self.workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        (self.workdir / "owner").write_text(str(os.getpid()))
        self.log_path = self.workdir / "hol-light.log"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.workdir / "ctl.sock"))
        self._listener.listen(16)
        self._clone_lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._base: WarmProcess | None = None
        self._counter = 0

    def scratch_file(self, stem: str, text: str | bytes) -> Path:
        """A file the sandboxed processes can read (contexts are loaded from files)."""
        with self._clone_lock:
            self._counter += 1
            path = self.workdir / f"{stem}-{self._counter}.ml"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    def _command(self, build: Path) -> list[str]:
        home = self.hol_dir.resolve()
        if self.native is not None:
            cmd = [str(self.native.executable)]
        else:
            toplevel = toplevel_command(home)  # first: it says what is wrong with the directory
            script = self.workdir / "start.ml"
            script.write_text(start_script(home, build))
            cmd = [*toplevel, str(script)]
        if self.sandbox:
            check_bwrap_works()
            seen = [self.workdir, build, *hol_light_paths(home), *self.read_only, *ocaml_paths()]
            if self.native is not None:
                seen.append(self.native.directory)
            cmd = bwrap_prefix(read_only=seen) + cmd
        return cmd

    def can_see(self, path: Path) -> bool:
        """Whether the sandboxed processes see `path` (everything does without a sandbox)."""
        visible = [self.workdir, self.hol_dir, Path("/usr"), *self.read_only]
        return not self.sandbox or any(path.absolute().is_relative_to(v) for v in visible)

    def start(self) -> WarmProcess:
        """Boot HOL Light (minutes) and return the base warm process.

        The sandbox dies with the thread that calls this (bwrap --die-with-parent), so
        call it from a thread that outlives every use of the warm processes. If it fails,
        the launcher is closed: not every caller closes one that never started."""
        try:
            return self._boot()
        except BaseException:
            self.close()
            raise

    def _boot(self) -> WarmProcess:
        build = build_dir()
        token = secrets.token_hex(16)
        with open(self.log_path, "ab") as log:  # append: every process and proofeval write it
            self._proc = subprocess.Popen(
                self._command(build),
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._environment(build),
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=unlimited_stack if self.native is not None else None,
            )
        assert self._proc.stdin is not None
        try:  # the token is not in the environment, which an attempt could read
            with self._proc.stdin as secret:
                secret.write(f"{token}\n".encode())
        except BrokenPipeError:  # it died at once: _accept says why
            pass
        self._base = WarmProcess(self, self._accept(token, BOOT_LIMIT))
        return self._base

    def _environment(self, build: Path) -> dict[str, str]:
        """Only what HOL Light needs: never the caller's environment (an API key)."""
        native = {}
        if self.native is not None:
            from proofeval.provers.hol_light.native import native_environment

            native = native_environment(self.native)
        return native | {
            "PATH": "/usr/bin:/bin",
            "HOME": SCRATCH,
            "TMPDIR": SCRATCH,
            "LANG": "C.UTF-8",
            "PROOFEVAL_SOCKET": str(self.workdir / "ctl.sock"),
            "PROOFEVAL_BUILD_DIR": str(build),
            "HOLLIGHT_DIR": str(self.hol_dir.resolve()),
            **findlib_environment(build, self.hol_dir.resolve()),
            # Deep proofs (s2n-bignum's correctness theorems) overflow the default bytecode
            # stack; the official harness raises it the same way.
            "OCAMLRUNPARAM": os.environ.get("OCAMLRUNPARAM", "l=1000000000"),
        }

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return " ".join(text[-300:].split())

    def _accept(self, token: str, limit: float) -> Connection:
        """The connection that says `token`; others (anything in the sandbox may connect)
        are dropped, so they cannot spoil a clone."""
        start = time.monotonic()
        while True:
            conn = self._next_connection(start, limit)
            try:
                hello = conn.receive(5.0)
            except CheckerError:
                hello = []
            if len(hello) == 3 and hello[:2] == ["hello", token] and hello[2].isdigit():
                conn.pid = int(hello[2])
                return conn
            conn.close()

    def _next_connection(self, start: float, limit: float) -> Connection:
        self._listener.settimeout(1.0)
        while True:
            try:
                sock, _ = self._listener.accept()
                break
            except TimeoutError:
                pass
            if self._proc is not None and self._proc.poll() is not None:
                raise CheckerError(f"HOL Light exited while starting: ...{self.log_tail()}")
            waited = time.monotonic() - start
            if waited > limit:
                raise CheckerError(f"HOL Light did not start within {limit:.0f}s")
            if self.on_wait is not None:
                self.on_wait(waited)
        return Connection(sock, 0)

    def kill(self, proc: WarmProcess) -> None:
        """Have the sandbox's first process (the base, the namespace's init, which no
        process inside can stop) kill `proc`, its process group and every process it
        started, whatever session they left for: the deadline of code that runs there,
        whatever that code does with its own signals."""
        base = self._base
        if base is None or base is proc or proc.conn.pid <= 1:
            return
        with self._clone_lock:
            try:
                base._request(["kill", str(proc.conn.pid)], 60.0)
            except CheckerError:
                pass  # the base is gone: so is the sandbox, and the process with it
        proc.close()

    def clone(self, parent: WarmProcess) -> WarmProcess:
        with self._clone_lock:
            token = secrets.token_hex(16)
            reply = parent._request(["clone", token], 60.0)
            if reply != ["ok"]:
                raise CheckerError(f"could not clone a HOL Light process: {reply}")
            return WarmProcess(self, self._accept(token, 60.0), parent)

    def close(self) -> None:
        self._listener.close()
        if self._proc is not None:
            stop(self._proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


def launcher(
    settings: CheckSettings,
    read_only: Iterable[Path] = (),
    on_event: Callable[[str], None] = lambda _msg: None,
) -> Launcher:
    """The launcher `settings` ask for: native where asked and possible (see native.py)."""
    from proofeval.provers.hol_light.native import choose

    hol_dir = settings.hol_dir or DEBIAN_HOL_LIGHT
    native = choose(hol_dir, settings.native, on_event)
    # Measured: natively 15 s on an idle machine, 35-90 s beside other work; in
    # bytecode 75 s idle, several minutes loaded.
    took = "natively 15-90 s" if native else "1-5 minutes"
    on_event(f"loading the HOL Light core ({took}, by how busy the machine is)")
    return Launcher(
        hol_dir, settings.sandbox, on_wait=still_loading(on_event), read_only=read_only,
        native=native,
    )  # fmt: skip


def still_loading(on_event: Callable[[str], None], every: float = 60.0) -> Callable[[float], None]:
    """What the launcher calls while the core loads (about once a second): a line each
    `every` seconds, so that a long load shows it is alive."""
    said = [0]

    def on_wait(waited: float) -> None:
        if int(waited // every) > said[0]:
            said[0] = int(waited // every)
            on_event(f"still loading the HOL Light core ({said[0] * every:.0f} s)")

    return on_wait
