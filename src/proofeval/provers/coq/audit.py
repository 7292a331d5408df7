"""The proof-term audit (integrity layer 6 for Coq): a small Coq plugin, built from
plugin/audit.mlg against Debian's libcoq-core-ocaml-dev, that walks a theorem's proof
term and those of the constants the answer added, and reports fixpoints, cofixpoints
and VM/native casts. It does not trust the answer-language filter (policy.py): a header's
Ltac or notation can build a fixpoint that no answer sentence names.

`make install` builds it once (audit.main); a checker that
finds no build makes one (a few seconds) in the user's cache. A session gets a copy
inside its work directory, the only place its sandbox shows besides /usr.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.provers.coq.toolchain import HOST_CHAIN, OCAML_RUNTIME, Toolchain

SOURCE = Path(__file__).with_name("plugin")
PACKAGE = "proofeval-audit"  # the findlib package; Coq loads "proofeval-audit.plugin"
PLUGIN = "proofeval_audit.cmxs"
GRAMMARS = ("audit.mlg", "check.mlg")
MODULES = ("judge.ml", "compat.ml", "audit.ml", "check.ml")  # in link order
_lock = threading.Lock()


@functools.cache
def stamp(chain: Toolchain = HOST_CHAIN) -> str:
    """Which build fits: the plugin's sources and the Coq (the host's version, or the
    toolchain, whose Coq is fixed until it is built again)."""
    digest = hashlib.sha256()
    for path in sorted(SOURCE.iterdir()):
        digest.update(path.name.encode() + path.read_bytes())
    if chain.home is None:
        version = subprocess.run(["coqc", "-print-version"], capture_output=True, text=True)
        digest.update(version.stdout.encode())
    else:
        digest.update(chain.name.encode())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "proofeval" / "coq-audit"


def built(chain: Toolchain = HOST_CHAIN) -> Path:
    """The directory holding `proofeval-audit/` (META and the plugin) for these sources,
    built if needed: a toolchain's inside it, against its own libcoq-core, the host's in
    the user's cache. CheckerError saying what is missing when it cannot be built."""
    target = (chain.audit_dir or cache_root()) / stamp(chain)
    with _lock:
        if not (target / PACKAGE / PLUGIN).is_file():
            build(target, chain)
    return target


def build(target: Path, chain: Toolchain = HOST_CHAIN) -> None:
    """Compile the plugin into target/proofeval-audit (coqpp, then ocamlfind ocamlopt),
    with the toolchain's own compilers and libcoq-core."""
    for tool in ("coqpp", "ocamlfind"):
        if chain.home is None and shutil.which(tool) is None:
            raise CheckerError(f"cannot build the Coq audit plugin: {tool} is missing "
                               "(run `make install`: coq, ocaml-findlib)")  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        work = Path(scratch)
        version = chain.version()
        for name, text in sources_for(version).items():
            (work / name).write_text(text)
        run = functools.partial(_run, work=work, chain=chain)
        for grammar in GRAMMARS:
            run(["coqpp", grammar])
        run(["ocamlfind", "ocamlopt", "-package", "coq-core.vernac", "-rectypes",
             "-thread", "-shared", "-o", PLUGIN, *MODULES])  # fmt: skip
        package = work / "out" / PACKAGE
        package.mkdir(parents=True)
        shutil.copy(work / PLUGIN, package / PLUGIN)
        shutil.copy(SOURCE / "META", package / "META")
        if (target / PACKAGE / PLUGIN).is_file():  # another process built it meanwhile
            return
        shutil.rmtree(target, ignore_errors=True)
        (work / "out").rename(target)


def sources_for(version: str) -> dict[str, str]:
    """The plugin's files as the Coq `version` ("8.20.1") compiles them: its compat
    module is the one for that version, and a match's return clause is (names, ret) up
    to 8.19 and ((names, ret), relevance) from 8.20."""
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    clause = "((names, ret), _)" if parts >= (8, 20) else "(names, ret)"
    compat = "compat_8_20.ml" if parts >= (8, 20) else "compat_8_16.ml"
    return {
        "judge.ml": (SOURCE / "judge.ml").read_text(),
        "compat.ml": (SOURCE / compat).read_text(),
        "audit.mlg": (SOURCE / "audit.mlg").read_text().replace("CASE_RETURN", clause),
        "check.mlg": (SOURCE / "check.mlg").read_text(),
    }


def _run(command: list[str], work: Path, chain: Toolchain) -> None:
    """Run a build step: a toolchain's inside its sandbox, where its /usr is /usr."""
    env = None
    if chain.home is not None:
        conf = work / "ocamlfind.conf"
        conf.write_text(f'destdir="{work}"\npath="{chain.ocaml_path()}"\n')
        env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8", **OCAML_RUNTIME,
               "OCAMLFIND_CONF": str(conf)}  # fmt: skip
    name = command[0]
    if chain.home is not None:
        command = chain.sandbox(writable=[work]) + command
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        why = " ".join((done.stderr or done.stdout).split())[-400:]
        raise CheckerError(
            f"cannot build the Coq audit plugin for {chain.name}: {name} failed: {why} "
            "(Debian: libcoq-core-ocaml-dev, ocaml-findlib)"
        )


def install_into(workdir: Path, chain: Toolchain = HOST_CHAIN) -> Path:
    """A copy of the toolchain's plugin under `workdir` (which the sandbox shows); the
    findlib directory to put on coqtop's search path."""
    where = workdir / f"findlib_{chain.name}"
    source = built(chain) / PACKAGE
    with _lock:  # workers start sessions at once: none may see a half-copied plugin
        if not (where / PACKAGE).is_dir():
            partial = where / f".{PACKAGE}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(source, partial)
            partial.rename(where / PACKAGE)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description="Build proofeval's Coq audit plugin.")
    parser.parse_args()
    print(f"Coq audit plugin: {built() / PACKAGE}")


if __name__ == "__main__":
    main()
