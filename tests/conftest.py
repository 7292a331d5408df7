"""Shared fixtures: HOL Light is loaded once per test session (about two minutes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.provers.hol_light.server import Launcher, WarmProcess
from tests.openai_stub import StubServer

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A file in ../shared/data; skips the test when that directory is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data is not present beside this clone ({path})")
    return path


@pytest.fixture(scope="session")
def hol_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmProcess]:
    """The sandboxed HOL Light core, loaded once; tests clone it. It sees the tests'
    temporary directories (where their benchmarks live), read-only."""
    launcher = Launcher(read_only=[tmp_path_factory.getbasetemp()])
    try:
        yield launcher.start()
    finally:
        launcher.close()


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
