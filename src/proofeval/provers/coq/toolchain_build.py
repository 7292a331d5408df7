"""Building a Coq toolchain: a Debian root made by debootstrap (minbase) and apt-get
inside it, then issue 25's audit plugin compiled against the root's own libcoq-core.

The build goes into NAME.partial and is renamed to NAME only when complete, so a
toolchain that `installed()` lists is whole; an interrupted build starts again.
debootstrap and chroot need root (the project's machines run as root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import CheckerError, InputError
from proofeval.provers.coq import audit
from proofeval.provers.coq.toolchain import INFO, Toolchain, data_dir

MIRROR = "http://deb.debian.org/debian"
APT_LIMIT = 1800.0  # seconds for debootstrap or apt-get
# What checking needs (coq, the audit plugin's compiler), CoqHammer with the ATPs Debian
# packages (Vampire is not in Debian), and the libraries PutnamBench and miniF2F import.
COMMON = (
    "coq libcoq-core-ocaml-dev ocaml-findlib gcc libc6-dev "
    "libcoq-hammer eprover z3 cvc4 cvc5 "
    "libcoq-stdpp libcoq-coquelicot libcoq-flocq libcoq-mathcomp-ssreflect "
    "libcoq-mathcomp-fingroup libcoq-mathcomp-algebra libcoq-mathcomp-solvable "
    "libcoq-mathcomp-field libcoq-mathcomp-character libcoq-mathcomp-finmap "
    "libcoq-mathcomp-bigenough libcoq-mathcomp-real-closed libcoq-mathcomp-analysis "
    "libcoq-mathcomp-classical libcoq-mathcomp-multinomials libcoq-mathcomp-algebra-tactics "
    "libcoq-mathcomp-zify libcoq-hierarchy-builder libcoq-elpi libcoq-interval "
    "libcoq-equations libcoq-bignums"
).split()


@dataclass(frozen=True)
class Recipe:
    suite: str
    packages: tuple[str, ...]


RECIPES = {"debian13": Recipe("trixie", tuple(COMMON))}
Progress = Callable[[str], None]


def add(name: str, force: bool = False, say: Progress = print) -> Toolchain:
    """Build the toolchain `name` unless it is there already (`force`: build it again)."""
    recipe = RECIPES.get(name)
    if recipe is None:
        raise InputError(f"no recipe for a Coq toolchain {name!r}; known: {', '.join(RECIPES)}")
    home = data_dir() / name
    if (home / INFO).is_file() and not force:
        say(f"toolchain {name} is already built at {home}")
        return Toolchain(name, home)
    _needs_root()
    partial = data_dir() / f"{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    start = time.monotonic()
    _bootstrap(recipe, partial / "root", say)
    _install(recipe, partial / "root", say)
    chain = Toolchain(name, partial)
    say("building the audit plugin against the toolchain's libcoq-core")
    audit.build(partial / "audit" / audit.stamp(chain), chain)
    version = _coq_version(partial / "root")
    seconds = round(time.monotonic() - start)
    info = {"name": name, "suite": recipe.suite, "coq_version": version,
            "packages": list(recipe.packages), "built_seconds": seconds}  # fmt: skip
    (partial / INFO).write_text(json.dumps(info, indent=1) + "\n")
    if home.exists():
        shutil.rmtree(home)
    partial.rename(home)
    say(f"toolchain {name}: Coq {version} at {home} ({info['built_seconds']} s)")
    return Toolchain(name, home)


def _needs_root() -> None:
    if os.geteuid() != 0:
        raise InputError("building a Coq toolchain needs root (debootstrap, chroot)")
    if shutil.which("debootstrap") is None:
        raise InputError("debootstrap is not installed: run `make install` (Debian: debootstrap)")


def _bootstrap(recipe: Recipe, root: Path, say: Progress) -> None:
    say(f"debootstrap --variant=minbase {recipe.suite} (about a minute)")
    _run(["debootstrap", "--variant=minbase", recipe.suite, str(root), MIRROR])


def _install(recipe: Recipe, root: Path, say: Progress) -> None:
    say(f"apt-get install {len(recipe.packages)} packages inside the root")
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    chroot = ["chroot", str(root)]
    _run([*chroot, "apt-get", "update", "-q"], env)
    # a root that is thrown away when the build fails needs no fsync per file
    _run([*chroot, "apt-get", "install", "-y", "-q", "--no-install-recommends",
          "-o", "Dpkg::Options::=--force-unsafe-io", *recipe.packages], env)  # fmt: skip
    _run([*chroot, "apt-get", "clean"], env)


def _coq_version(root: Path) -> str:
    done = subprocess.run(["chroot", str(root), "coqc", "-print-version"],
                          capture_output=True, text=True)  # fmt: skip
    return (done.stdout.split() or ["unknown"])[0]


def _run(command: list[str], env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_LIMIT)
    except subprocess.TimeoutExpired:
        raise CheckerError(f"{' '.join(command[:3])} gave no answer in {APT_LIMIT:.0f} s") from None
    if done.returncode != 0:
        why = " ".join((done.stderr or done.stdout).split())[-400:]
        raise CheckerError(f"{' '.join(command[:4])} failed: {why}")
