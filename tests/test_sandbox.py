"""The sandbox's own guarantees, apart from any prover: the CPU time of what ran inside is
counted when it ends (benchmarks and budgets read it), however it ends; the prover is the
sandbox's first process."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from proofeval.provers.sandbox import bwrap_prefix, check_bwrap_works, stop

PYTHON = "/usr/bin/python3"  # the system's, which the sandbox shows (the venv's is not)
# Burns `seconds` of its own CPU time (not wall time: the machine may be loaded), then
# says so, then either ends or keeps burning until killed.
BURN = """
import sys, time
end = time.process_time() + {seconds}
while time.process_time() < end:
    pass
print("burnt", flush=True)
while {forever}:
    pass
"""


@pytest.fixture(scope="module", autouse=True)
def _bwrap() -> None:
    check_bwrap_works()
    assert Path(PYTHON).exists(), "the tests need Debian's python3"


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def burner(seconds: float, forever: bool) -> list[str]:
    code = BURN.format(seconds=seconds, forever=forever)
    return [*bwrap_prefix(), PYTHON, "-c", code]


def test_the_cpu_of_a_sandboxed_process_that_ends_is_counted() -> None:
    before = children_cpu()
    done = subprocess.run(burner(0.5, False), capture_output=True, text=True, check=True)
    assert done.stdout == "burnt\n"
    assert children_cpu() - before >= 0.45


def test_the_cpu_of_a_stopped_sandbox_is_counted() -> None:
    before = children_cpu()
    proc = subprocess.Popen(burner(0.5, True), stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"burnt\n"
    stop(proc)
    assert proc.returncode is not None
    assert children_cpu() - before >= 0.45


def test_stop_ends_an_unsandboxed_process_at_once() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    stop(proc)
    assert proc.returncode == -9


def test_the_prover_is_the_sandboxs_first_process() -> None:
    code = "import os; print(os.getpid(), open('/proc/1/cmdline').read().split(chr(0))[0])"
    done = subprocess.run(
        [*bwrap_prefix(), PYTHON, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["1", PYTHON]
