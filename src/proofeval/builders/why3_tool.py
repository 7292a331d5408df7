"""Why3 on this machine: its configuration (the detected provers, with cvc5 declared by
hand where Why3 does not detect it: 1.5.1 predates it, 1.8 knows it) and proofeval's
program against Why3's OCaml API (why3_tool.ml, with why3_compat_<version>.ml for what
differs between Why3 1.5 and 1.8), compiled once per source and Why3 version into the
cache."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from proofeval.errors import CheckerError, InputError

CVC5_SECTION = """
[prover]
name = "CVC5"
version = "{version}"
command = "cvc5 --tlimit=%t000 --lang=smt2 %f"
driver = "cvc4_16"
"""
E3_SECTION = """
[prover]
name = "Eprover"
version = "{version}"
command = "eprover -s -R --auto --cpu-limit=%t --tstp-in %f"
driver = "eprover"
"""
# Why3 names the provers it detects so; the order is the order of the report's "closed by".
ATP_NAMES = ("CVC5", "CVC4", "Z3", "Eprover", "Spass")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "proofeval" / "why3"


@functools.cache
def why3_version() -> str:
    """`why3 --version`'s last word ("1.5.1"); InputError when Why3 is missing."""
    try:
        done = subprocess.run(["why3", "--version"], capture_output=True, text=True)
    except OSError:
        raise InputError("Why3 is not installed: run `make install` (Debian: why3)") from None
    return (done.stdout.split() or ["unknown"])[-1]


def coq_library() -> Path:
    """Why3's Coq library as `make install` builds it (<why3 libdir>/coq)."""
    libdir = subprocess.run(["why3", "--print-libdir"], capture_output=True, text=True)
    library = Path(libdir.stdout.strip()) / "coq"
    if not (library / "BuiltIn.vo").is_file():
        raise InputError(
            f"Why3's Coq library is not built ({library}/BuiltIn.vo is missing): run "
            "`make install` (scripts/install-why3-coq-library)"
        )
    return library


@functools.cache
def config() -> Path:
    """A Why3 configuration of this machine's provers (cached): `why3 config detect`, with
    cvc5 and E declared by hand where Why3 would not run them (see _declared)."""
    why3_version()
    cvc5, eprover = _version("cvc5", r"version (\S+)"), _version("eprover", r"^E (\S+)")
    # "v2": configurations since cvc5 and E are declared only where Why3 needs it.
    mark = f"v2 {why3_version()} {cvc5} {eprover} {shutil.which('SPASS')}"
    path = cache_root() / f"why3-{hashlib.sha256(mark.encode()).hexdigest()[:16]}.conf"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(
        ["why3", "-C", str(scratch), "config", "detect"], capture_output=True, text=True
    )
    if done.returncode != 0 or not scratch.is_file():
        raise CheckerError(f"why3 config detect failed: {done.stderr.strip()[-300:]}")
    scratch.write_text(_declared(scratch.read_text(), cvc5, eprover))
    scratch.replace(path)
    return path


def _declared(detected: str, cvc5: str, eprover: str) -> str:
    """Why3 1.5 does not detect cvc5 (1.8 does): declared when absent. Why3 runs an E it
    does not know (3.x, Debian 13's) with `-tAuto`, which E 3 refuses, so every call fails:
    E 3 is declared with `--auto` instead, in place of the detected section."""
    sections = detected.strip("\n").split("\n\n")
    major = re.match(r"\d+", eprover)
    if major and int(major.group()) >= 3:
        sections = [s for s in sections if '\nname = "Eprover"\n' not in s]
        sections.append(E3_SECTION.format(version=eprover).strip("\n"))
    if cvc5 and not any('\nname = "CVC5"\n' in s for s in sections):
        sections.append(CVC5_SECTION.format(version=cvc5).strip("\n"))
    return "\n\n".join(sections).rstrip("\n") + "\n"


def _version(program: str, pattern: str) -> str:
    """`program --version` as `pattern`'s group; "" when it is not installed."""
    if shutil.which(program) is None:
        return ""
    done = subprocess.run([program, "--version"], capture_output=True, text=True)
    found = re.search(pattern, done.stdout, re.MULTILINE)
    return found.group(1) if found else "unknown"


def installed_provers() -> list[str]:
    """The automatic provers of ATP_NAMES that the configuration has."""
    text = config().read_text()
    named = set(re.findall(r'^name = "([^"]+)"', text, re.MULTILINE))
    return [name for name in ATP_NAMES if name in named]


COMPAT = "why3_compat"  # what differs between Why3 versions: see compat_variant


def _why3_major_minor() -> tuple[int, int]:
    found = re.findall(r"\d+", why3_version())[:2]
    if len(found) < 2:
        raise InputError(f"cannot read Why3's version from `why3 --version` ({why3_version()})")
    return int(found[0]), int(found[1])


def compat_variant() -> str:
    """The source of why3_compat.ml for this Why3. Since 1.6 a location spans lines
    (Loc.get gives its end too), drivers load through Driver, and a prover call takes the
    configuration and a time limit in float seconds; 1.8 renamed its limits (`~limits`,
    `empty_limits`). 1.6 and 1.7 lie between the two variants and are refused by name
    rather than by a compiler error."""
    version = _why3_major_minor()
    if version >= (1, 8):
        return "why3_compat_1_8.ml"
    if version < (1, 6):
        return "why3_compat_1_5.ml"
    raise InputError(
        f"Why3 {why3_version()} is not supported: proofeval's Why3 tool knows Why3 1.5 "
        "(Debian 12) and 1.8 (Debian 13)"
    )


@functools.cache
def binary() -> Path:
    """why3_tool.ml compiled against Why3's OCaml API (libwhy3-ocaml-dev), with this Why3's
    why3_compat.ml, cached."""
    sources = resources.files("proofeval.builders")
    tool = Path(str(sources / "why3_tool.ml"))
    compat = Path(str(sources / compat_variant()))
    text = tool.read_bytes() + compat.read_bytes() + why3_version().encode()
    target = cache_root() / f"tool-{hashlib.sha256(text).hexdigest()[:16]}"
    if target.is_file():
        return target
    if shutil.which("ocamlfind") is None:
        raise InputError("ocamlfind is not installed: run `make install` (ocaml-findlib)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="proofeval-why3-") as scratch:
        shutil.copy(tool, Path(scratch) / "tool.ml")
        shutil.copy(compat, Path(scratch) / f"{COMPAT}.ml")
        _compile(Path(scratch))
        shutil.move(str(Path(scratch) / "tool"), target)
    return target


def _compile(scratch: Path) -> None:
    cmd = ["ocamlfind", "ocamlopt", "-package", "why3", "-linkpkg",
           f"{COMPAT}.ml", "tool.ml", "-o", "tool"]  # fmt: skip
    done = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        hint = " (is libwhy3-ocaml-dev installed? `make install`)"
        raise CheckerError(f"compiling tool.ml failed{hint}: {done.stderr.strip()[-500:]}")


@dataclass(frozen=True)
class Goal:
    """One VC as the tool enumerates it: its number in the file, module, Why3's goal name
    and its index among the goal's parts (0 without splitting)."""

    number: int
    module: str
    goal: str
    index: int


def print_coq(source: Path, outdir: Path, split: bool, libdir: Path | None = None) -> list[Goal]:
    """Each VC of `source` printed by Why3's Coq driver into outdir/<number>.v; the files
    it `use`s are looked for in `libdir` (default: its directory), then Why3's library."""
    where = str(libdir or source.parent)
    lines = _run(["coq", str(source), where, str(outdir), _granularity(split)], source)
    return [_goal(line.split("\t")) for line in lines]


@dataclass(frozen=True)
class AtpResult:
    goal: Goal
    valid: bool
    provers: str  # those that closed it ("CVC5", or "CVC4+Z3" over a split), "" if not
    seconds: float


def prove(
    source: Path,
    split: bool,
    budget: float,
    strategy: str,
    provers: list[str],
    libdir: Path | None = None,
) -> Iterator[AtpResult]:
    """The automatic provers on each VC of `source`, as the tool reports them."""
    where = str(libdir or source.parent)
    args = ["atp", str(source), where, _granularity(split), str(budget), strategy, *provers]
    for line in _run(args, source):
        fields = line.split("\t")
        yield AtpResult(_goal(fields[:4]), fields[4] == "valid", fields[5], float(fields[6]))


def _granularity(split: bool) -> str:
    return "split" if split else "whole"


def _goal(fields: list[str]) -> Goal:
    return Goal(int(fields[0]), fields[1], fields[2], int(fields[3]))


def _run(args: list[str], source: Path) -> Iterator[str]:
    """The tool's output lines as they come; InputError with Why3's message when it
    rejects the source."""
    cmd = [str(binary()), str(config()), *args]
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        read = False
        try:
            yield from (line.rstrip("\n") for line in proc.stdout)
            read = True
        finally:
            if not read:
                _stop(proc)
        error = proc.stderr.read()
        if proc.wait() != 0:
            raise InputError(f"{source}: Why3: {' '.join(error.split())[-600:]}")


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the tool and the provers it started, when its output is no longer read (an
    interrupt, or the caller stopped early)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
