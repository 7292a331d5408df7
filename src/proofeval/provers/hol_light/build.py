"""Compile the OCaml side of the HOL Light checker once per source version."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from proofeval.errors import CheckerError, InputError

COMPAT = "proofeval_ocaml"  # what differs between OCaml versions: see ocaml_variant
MODULES = (
    COMPAT,
    "proofeval_hints",
    "proofeval_text",
    "proofeval_deny",
    "proofeval_phrases",
    "proofeval_verdict",
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
    *(f"{m}.ml" for m in MODULES if m != COMPAT),
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


def ocaml_major_minor() -> tuple[int, int]:
    major, minor = (int(n) for n in re.findall(r"\d+", _ocaml_version())[:2])
    return major, minor


def ocaml_variant() -> str:
    """The source of proofeval_ocaml.ml for this OCaml: compiler-libs changed in 5.2
    (Pexp_fun folded into Pexp_function, constants with locations, the load path split
    into visible and hidden directories)."""
    return "proofeval_ocaml_5_2.ml" if ocaml_major_minor() >= (5, 2) else "proofeval_ocaml_4.ml"


def copy_compat(src: Path, out: Path) -> None:
    """Write proofeval_ocaml.ml, this OCaml's variant, into `out`."""
    shutil.copy(src / ocaml_variant(), out / f"{COMPAT}.ml")


def library_flags() -> list[str]:
    """Since OCaml 5 the unix library has its own directory (+unix), which the compiler
    adds by itself only with an alert."""
    return ["-I", "+unix"] if ocaml_major_minor() >= (5, 0) else []


def _fingerprint(src: Path) -> str:
    h = hashlib.sha256(_ocaml_version().encode())
    for name in (*SOURCES, ocaml_variant()):
        h.update(name.encode() + b"\0" + (src / name).read_bytes())
    return h.hexdigest()[:16]


def _compile(src: Path, out: Path) -> None:
    for name in SOURCES:
        shutil.copy(src / name, out / name)
    copy_compat(src, out)
    steps = [
        ["ocamlc", "-c", "proofeval_stubs.c"],
        ["ocamlmklib", "-o", "proofeval_stubs", "proofeval_stubs.o"],
        [
            "ocamlc",
            "-I",
            "+compiler-libs",
            *library_flags(),
            "-c",
            *(f"{m}.ml" for m in MODULES),
        ],  # fmt: skip
        ["ocamlc", "-c", f"{IDENTITY}.ml"],
    ]
    for cmd in steps:
        done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        if done.returncode != 0:
            raise CheckerError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")


def _link(out: Path, final: Path) -> None:
    # -dllpath must name the final directory: the toplevel finds the stubs there. The
    # kernel log, loaded before the server, uses them too.
    stubs = ["-dllib", "-lproofeval_stubs", "-dllpath", str(final)]
    for library, modules in ((IDENTITY, [IDENTITY]), ("proofeval_server", MODULES)):
        cmd = ["ocamlc", "-a", "-o", f"{library}.cma", *(f"{m}.cmo" for m in modules), *stubs]
        done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        if done.returncode != 0:
            raise CheckerError(f"linking the checker failed:\n{done.stdout}{done.stderr}")


FINDLIB_CONF = Path("/etc/ocamlfind.conf")


def uses_findlib(home: Path) -> bool:
    """Whether the HOL Light at `home` loads camlp5 through findlib (topfind): HOL Light 3
    does, Debian 12's does not."""
    hol = home / "hol.ml"
    return FINDLIB_CONF.is_file() and hol.is_file() and "topfind" in hol.read_text()


def findlib_environment(build: Path, home: Path) -> dict[str, str]:
    """Findlib reads its configuration from /etc: the sandbox shows no /etc, so a HOL
    Light that uses findlib is given a copy in the build directory, which it sees. Nothing
    for one that does not: the environment stays what that one needs."""
    if not uses_findlib(home):
        return {}
    copy = build / "ocamlfind.conf"
    text = FINDLIB_CONF.read_text()
    if not copy.is_file() or copy.read_text() != text:
        copy.write_text(text)
    return {"OCAMLFIND_CONF": str(copy)}


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
# HOL Light 3 (Debian 13's 3.0.0, github jrh13/hol-light since 2024) loads its core from
# hol_lib.ml, or from a compiled hol_lib.cmo when HOLLIGHT_USE_MODULE=1, chosen in hol.ml.
LIBRARY_CHOICE = re.compile(
    r'if use_module\s+then loads "hol_lib_use_module.ml"\s+else loads "hol_lib.ml";;'
)


def hol_text(home: Path) -> str:
    """hol.ml as proofeval runs it: with the kernel loaded by hol.ml's own
    `loads "fusion.ml";;`, so that the kernel log can follow it. Where hol.ml chooses
    between hol_lib.ml and a compiled core (HOL Light 3), hol_lib.ml's text takes the
    choice's place: the compiled core's kernel could not be logged."""
    hol = (home / "hol.ml").read_text(errors="replace")
    library = home / "hol_lib.ml"
    if KERNEL not in hol and library.is_file() and len(LIBRARY_CHOICE.findall(hol)) == 1:
        text = library.read_text(errors="replace")
        hol = LIBRARY_CHOICE.sub(lambda _: f"(* hol_lib.ml: inlined *)\n{text}", hol)
    return hol
