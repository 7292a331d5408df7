"""Shared fixtures: HOL Light is loaded once per test session (about two minutes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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
