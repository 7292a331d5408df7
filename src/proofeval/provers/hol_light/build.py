"""Compile the OCaml side of the HOL Light checker once per source version."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from proofeval.errors import CheckerError, InputError

MODULES = (
    "proofeval_text",
    "proofeval_deny",
    "proofeval_phrases",
    "proofeval_server",
    "proofeval_toplevel",
    "proofeval_states",
)  # in link order
# Loaded as HOL Light text: the kernel log right after fusion.ml, the replay and the proof
# states' goals after hol.ml.
HOL_TEXT = ("proofeval_kernel_log.ml", "proofeval_replay.ml", "proofeval_goals.ml")
IDENTITY = "proofeval_identity"  # compiled on its own: loaded with the kernel log
SOURCES = (
    "proofeval_stubs.c",
    "boot.ml",
    *HOL_TEXT,
    f"{IDENTITY}.ml",
    *(f"{m}.ml" for m in MODULES),
)


def _source_dir() -> Path:
    return Path(str(resources.files("proofeval.provers.hol_light") / "ocaml"))


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "proofeval"


def _ocaml_version() -> str:
    try:
        return subprocess.run(
            ["ocamlc", "-version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise InputError(
            "OCaml's compiler (ocamlc) is missing: run `make install` "
            "(Debian packages ocaml-nox, hol-light, libnum-ocaml-dev)"
        ) from exc


def _fingerprint(src: Path) -> str:
    h = hashlib.sha256(_ocaml_version().encode())
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (src / name).read_bytes())
    return h.hexdigest()[:16]


def _compile(src: Path, out: Path) -> None:
    for name in SOURCES:
        shutil.copy(src / name, out / name)
    steps = [
        ["ocamlc", "-c", "proofeval_stubs.c"],
        ["ocamlmklib", "-o", "proofeval_stubs", "proofeval_stubs.o"],
        ["ocamlc", "-I", "+compiler-libs", "-c", *(f"{m}.ml" for m in MODULES)],
        ["ocamlc", "-c", f"{IDENTITY}.ml"],
    ]
    for cmd in steps:
        done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        if done.returncode != 0:
            raise CheckerError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")


def _link(out: Path, final: Path) -> None:
    # -dllpath must name the final directory: the toplevel finds the stubs there.
    cmd = [
        "ocamlc",
        "-a",
        "-o",
        "proofeval_server.cma",
        *(f"{m}.cmo" for m in MODULES),
        "-dllib",
        "-lproofeval_stubs",
        "-dllpath",
        str(final),
    ]
    done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckerError(f"linking the checker failed:\n{done.stdout}{done.stderr}")


def build_dir() -> Path:
    """The directory with proofeval_server.cma and boot.ml, compiled if needed."""
    src = _source_dir()
    final = cache_root() / f"hol-light-{_fingerprint(src)}"
    if (final / "proofeval_server.cma").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=final.parent))
    try:
        _compile(src, tmp)
        _link(tmp, final)
        try:
            tmp.rename(final)
        except OSError:
            if not (final / "proofeval_server.cma").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def unlimited_stack() -> None:
    """HOL Light's deep recursion (and ocamlopt compiling its core) needs more than the
    default 8 MB of native stack; bytecode has its own (OCAMLRUNPARAM)."""
    resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


KERNEL = 'loads "fusion.ml";;'
