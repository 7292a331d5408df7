"""Coq toolchains: the host's Coq, or a root file system built from another Debian
release's packages (toolchain_build.py), kept under the data directory as
$XDG_DATA_HOME/proofeval/toolchains/NAME/{root,audit,toolchain.json}.

A toolchain's programs run only inside bubblewrap, with the toolchain's /usr as the
sandbox's /usr: coqtop, coqc, coqdep and coqchk see its libraries and nothing of the
host's system. A problem names its toolchain (Problem.coq_toolchain, or `--coq NAME`);
"" or "host" is the host's Coq.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.provers.sandbox import bwrap_prefix

HOST = "host"
INFO = "toolchain.json"
# OCaml 5 (Coq 8.20 on Debian 13) reserves address space for 128 domains' minor heaps at
# start, more than the sandbox's --as limit allows ("Not enough heap memory to reserve minor
# heaps"); Coq runs in one domain. OCaml 4 ignores the setting.
OCAML_RUNTIME = {"OCAMLRUNPARAM": "d=1"}
# Flags a toolchain's coqtop and coqc always get. Coq 8.20 made the warning that a
# `Variable` outside a section is a `#[local] Parameter` an error by default; benchmarks
# written for older Coq (PutnamBench) declare their context so. Its meaning is the same in
# both (an assumption of the header, which Print Assumptions reports), so debian13 keeps
# 8.16's warning.
COQ_FLAGS = {"debian13": ("-w", "declaration-outside-section")}
HOST_OCAML = "/usr/lib/ocaml:/usr/lib/ocaml/METAS"  # Debian 12's findlib path; /etc is not shown


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "proofeval" / "toolchains"


@dataclass(frozen=True)
class Toolchain:
    """Where a Coq lives: `home` None for the host's, else the toolchain's directory."""

    name: str = HOST
    home: Path | None = None

    @property
    def root(self) -> Path:
        """The file system whose /usr the prover sees."""
        return Path("/") if self.home is None else self.home / "root"

    @property
    def audit_dir(self) -> Path | None:
        """Where toolchain-add built the audit plugin (None: the host builds its own)."""
        return None if self.home is None else self.home / "audit"

    def binary(self, tool: str) -> str:
        """The path of `tool` as the prover's process sees it."""
        if self.home is None:
            found = shutil.which(tool)
            if found is None:
                raise InputError(f"Coq ({tool}) is not installed: run `make install` (Debian: coq)")
            return found
        path = f"/usr/bin/{tool}"
        if not (self.root / path.lstrip("/")).exists():
            raise InputError(f"the Coq toolchain {self.name} has no {path}: rebuild it with "
                             f"`proofeval toolchain add {self.name} --force`")  # fmt: skip
        return path

    def sandbox(
        self, writable: Iterable[Path] = (), read_only: Iterable[Path] = (), sandbox: bool = True
    ) -> list[str]:
        """The command prefix that runs one of this toolchain's programs: the sandbox,
        or nothing for the host's Coq run without one. A toolchain has no unsandboxed
        form: its programs need its /usr."""
        if sandbox or self.home is not None:
            return bwrap_prefix(writable=writable, read_only=read_only, system=self.root)
        return []

    @property
    def coq_flags(self) -> tuple[str, ...]:
        return COQ_FLAGS.get(self.name, ()) if self.home is not None else ()

    def ocaml_path(self) -> str:
        """Where findlib looks for Coq's plugins, as the sandbox sees it: the root's own
        /etc/ocamlfind.conf says (the sandbox shows no /etc)."""
        return _ocaml_path(self.root)

    def version(self) -> str:
        return _version(self)

    def describe(self) -> str:
        """The exact prover, as results and reports record it: "Coq 8.20.1 (debian13)"."""
        return f"Coq {self.version()} ({self.name})"


HOST_CHAIN = Toolchain()


@functools.cache
def _version(chain: Toolchain) -> str:
    if chain.home is not None:
        info = read_info(chain.home)
        if info.get("coq_version"):
            return str(info["coq_version"])
    if chain.home is None:
        done = subprocess.run(
            [chain.binary("coqc"), "-print-version"], capture_output=True, text=True
        )
        return (done.stdout.split() or ["unknown"])[0]
    with tempfile.TemporaryDirectory() as scratch:  # Coq 8.20 reads findlib's config first
        conf = Path(scratch) / "ocamlfind.conf"
        conf.write_text(f'path="{chain.ocaml_path()}"\n')
        command = [
            *chain.sandbox(read_only=[Path(scratch)]),
            chain.binary("coqc"),
            "-print-version",
        ]
        env = {"PATH": "/usr/bin:/bin", "OCAMLFIND_CONF": str(conf), **OCAML_RUNTIME}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    return (done.stdout.split() or ["unknown"])[0]


@functools.cache
def _ocaml_path(root: Path) -> str:
    try:
        conf = (root / "etc" / "ocamlfind.conf").read_text()
    except OSError:
        return HOST_OCAML
    found = re.search(r'^path\s*=\s*"([^"]*)"', conf, re.MULTILINE)
    return found[1] if found else HOST_OCAML


def read_info(home: Path) -> dict[str, object]:
    try:
        data = json.loads((home / INFO).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def installed() -> list[str]:
    """The names of the toolchains built and complete under the data directory."""
    base = data_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / INFO).is_file() and (p / "root").is_dir())


def resolve(name: str) -> Toolchain:
    """The toolchain a problem or an option names: "" or "host", an installed name, or a
    Coq version prefix ("8.20") that one installed toolchain has; InputError otherwise."""
    if name in ("", HOST):
        return Toolchain()
    if name in installed():
        return Toolchain(name, data_dir() / name)
    by_version = [n for n in installed() if _version_matches(n, name)]
    if len(by_version) == 1:
        return Toolchain(by_version[0], data_dir() / by_version[0])
    known = ", ".join([HOST, *installed()])
    hint = " (toolchains that can be built: debian13)" if name not in installed() else ""
    raise InputError(
        f"no Coq toolchain {name!r} is installed (installed: {known}); "
        f"build one with `proofeval toolchain add NAME`{hint}"
    )


def _version_matches(name: str, wanted: str) -> bool:
    version = str(read_info(data_dir() / name).get("coq_version", ""))
    return version == wanted or version.startswith(wanted + ".")
