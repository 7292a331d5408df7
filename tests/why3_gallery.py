"""Why3's own verified programs (Debian's why3-examples) and what `why3 prove` says of
them: the reference the Why3 tool and the ATP baseline are compared with."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from proofeval.builders import why3_tool

GALLERY = Path("/usr/share/doc/why3-examples/examples")
PROGRAMS = ("fact.mlw", "isqrt.mlw")  # 13 goals Z3 closes at 2 s, 3 it does not


def why3_prove(prover: str, seconds: int) -> list[tuple[str, bool]]:
    """(goal, valid) for each goal, in order, as `why3 prove -P` reports them."""
    done = subprocess.run(
        ["why3", "-C", str(why3_tool.config()), "prove", "-P", prover, "-t", str(seconds),
         *(str(GALLERY / p) for p in PROGRAMS)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr  # 2: some goal is not valid
    found = re.findall(r"^Goal (\S+)\.\nProver result is: (\w+)", done.stdout, re.MULTILINE)
    return [(goal, answer == "Valid") for goal, answer in found]


def why3_prove_z3(seconds: int) -> list[tuple[str, bool]]:
    """`why3_prove` with the plain Z3 of the tool's configuration, no alternative."""
    version = re.search(r'name = "Z3"\npath = .*\nversion = "(.*)"', why3_tool.config().read_text())
    assert version is not None
    return why3_prove(f"Z3,{version.group(1)},", seconds)
