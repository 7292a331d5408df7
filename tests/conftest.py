"""Shared fixtures: HOL Light is loaded once per test session (about two minutes).

What a test needs is a marker (declared in pyproject.toml): `hol`, `coq`, `why3` for the
real provers, `service` for a test that starts the HTTP service, the MCP server or a Ray
cluster. `make test-fast` runs the tests with none of them; `make test` runs all. A test
that takes one of the HOL Light fixtures below, or runs on the Coq toolchains (`chain`),
is marked here; a file whose other tests need a prover says so with `pytestmark`."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from proofeval.provers.hol_light.native import NativeUnavailable, is_hol_light_3, native_build
from proofeval.provers.hol_light.server import DEBIAN_HOL_LIGHT, Launcher, WarmProcess
from tests.openai_stub import StubServer

# How this HOL Light prints `!`: HOL Light 3 (Debian 13) prints `forall `.
FORALL = "forall " if is_hol_light_3(DEBIAN_HOL_LIGHT) else "!"

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A file in ../shared/data; skips the test when that directory is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data is not present beside this clone ({path})")
    return path


def debian_release() -> int:
    """The host's Debian major release (12, 13; 0 when it is not Debian)."""
    try:
        return int(Path("/etc/debian_version").read_text().split(".")[0])
    except (OSError, ValueError):
        return 0


def skip_without_why3_coq_library(module: bool = False) -> None:
    """On a Debian 13 host `make install` leaves Why3's Coq library out, with a note, when
    the archive does not serve the why3 source package it is built from: the tests that
    need it skip there, saying so. On Debian 12 a missing library is a failed install."""
    from proofeval.builders import why3_tool
    from proofeval.errors import InputError

    if debian_release() < 13:
        return
    try:
        why3_tool.coq_library()
    except InputError as exc:
        reason = (
            f"Debian {debian_release()} host: {exc}; make install could not fetch the why3 "
            "source package"
        )
        pytest.skip(reason, allow_module_level=module)


@pytest.fixture(scope="session")
def hol_bytecode_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmProcess]:
    """The sandboxed HOL Light core (the bytecode toplevel), loaded once; tests clone it.
    It sees the tests' temporary directories (where their benchmarks live), read-only."""
    launcher = Launcher(read_only=[tmp_path_factory.getbasetemp()])
    try:
        yield launcher.start()
    finally:
        launcher.close()


@pytest.fixture(scope="session")
def hol_base(hol_bytecode_base: WarmProcess) -> WarmProcess:
    return hol_bytecode_base


@pytest.fixture(scope="session")
def hol_native_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmProcess]:
    """The same, natively compiled (built once into the cache); skipped, with the reason,
    where this machine cannot build it."""
    try:
        native = native_build(DEBIAN_HOL_LIGHT)
    except NativeUnavailable as exc:
        pytest.skip(f"HOL Light cannot be compiled natively here: {exc}")
    launcher = Launcher(read_only=[tmp_path_factory.getbasetemp()], native=native)
    try:
        yield launcher.start()
    finally:
        launcher.close()


def on_both_paths() -> tuple[object, object]:
    """Module fixtures `hol_base` and `core` that run the module's tests on the bytecode
    path, then on the native path: `hol_base, core = on_both_paths()`."""

    @pytest.fixture(scope="module", params=["bytecode", "native"], name="hol_base")
    def base(request: pytest.FixtureRequest) -> WarmProcess:
        return request.getfixturevalue(f"hol_{request.param}_base")

    @pytest.fixture(scope="module", name="core")
    def core(hol_base: WarmProcess) -> Iterator[WarmProcess]:
        proc = hol_base.clone()
        yield proc
        proc.close()

    return base, core


@pytest.fixture(scope="session")
def core(hol_base: WarmProcess) -> Iterator[WarmProcess]:
    """A warm process with only the core loaded: forks of it check attempts."""
    proc = hol_base.clone()
    yield proc
    proc.close()


def with_context(base: WarmProcess, header: str, directory: str = "") -> WarmProcess:
    proc = base.clone()
    proc.load(base.launcher.scratch_file("context", header), directory)
    return proc


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    """A fresh OpenAI-compatible stub server per test (serving every `n`)."""
    with StubServer() as server:
        yield server


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """The TMPDIR for a proofeval process that a test stops: the scratch directories it
    makes (proofeval-coq-*) are seen here, and what a SIGKILL leaves is removed with it,
    not left in /tmp."""
    where = tmp_path / "scratch"
    where.mkdir()
    yield where
    shutil.rmtree(where, ignore_errors=True)


# --- What a test needs, and the fast lane kept honest ---------------------------------

NEEDS = ("hol", "coq", "why3", "service")
HOL_FIXTURES = frozenset({"hol_base", "hol_bytecode_base", "hol_native_base", "core"})
# The programs of the provers and of the toolchains they are built and run with; then a
# cluster, and the CLI in a process of its own, where this process cannot see what they
# start. A sandboxed launch names the program further down its command line, so every word
# of it is looked at.
REFUSED_PROGRAMS = frozenset({
    "ocaml", "ocaml-hol", "ocamlrun", "ocamlc", "ocamlopt", "ocamlfind", "camlp5",
    "proofeval-hol-native", "coqtop", "coqc", "coqchk", "coqdep", "coq_makefile", "rocq",
    "why3", "frama-c", "eprover", "z3", "cvc4", "cvc5", "SPASS", "alt-ergo", "vampire",
    "chroot", "debootstrap", "ray", "proofeval",
})  # fmt: skip
REFUSED: list[str] = []


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HOL_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.hol)
        if "chain" in item.fixturenames:  # parametrized over tests/coq_chains.py
            item.add_marker(pytest.mark.coq)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run none of whose tests is marked as needing a prover (`make test-fast`, or a file
    of such tests) refuses to start one: an unmarked test that needs a prover would otherwise
    quietly run it and make the fast lane slow, or fail where the prover is missing for a
    reason nobody reads. Starting a program through subprocess raises OSError, as a missing
    program does; whatever the code under test makes of that, the test fails, saying which
    program (pytest_runtest_makereport)."""
    if any(item.get_closest_marker(m) for item in session.items for m in NEEDS):
        return
    start = subprocess.Popen.__init__

    def refusing(self: subprocess.Popen, args: Any, *rest: Any, **kw: Any) -> None:
        if isinstance(args, (str, bytes, os.PathLike)):  # a shell's command line, or one path
            words = os.fsdecode(args).split()
        else:  # an argument is one word, whatever it holds (`python -c CODE`)
            words = [os.fsdecode(w) for w in args]
        if refused(words):
            REFUSED.append(" ".join(words)[:300])
            raise OSError(f"a test with no marker for it started `{REFUSED[-1][:100]}`")
        start(self, args, *rest, **kw)

    subprocess.Popen.__init__ = refusing  # type: ignore[method-assign]


def refused(words: list[str]) -> bool:
    """Whether a command line starts a prover, a cluster or `python -m proofeval...`."""
    if REFUSED_PROGRAMS.intersection(os.path.basename(w) for w in words):
        return True
    return len(words) > 2 and words[1] == "-m" and words[2].startswith("proofeval")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Fails the phase of a test in which a refused program was started, even where the
    code under test made something else of the error (a missing prover is often an ERROR
    verdict, which a test may expect)."""
    report = yield
    if REFUSED:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a prover, a cluster or the CLI without a marker saying so "
            f"({', '.join(NEEDS)}: see tests/conftest.py):\n  " + "\n  ".join(REFUSED)
        )
        REFUSED.clear()
    return report
