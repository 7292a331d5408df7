"""`--hol-light DIR`: Debian's HOL Light, a directory of links to it, a built source tree,
and what is said when DIR is none of these or too old for the sources."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.errors import InputError
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import (
    DEBIAN_HOL_LIGHT,
    hol_light_paths,
    toplevel_command,
)
from proofeval.provers.interface import CheckSettings
from proofeval.provers.sandbox import bwrap_prefix
from proofeval.runs.check import CheckOptions, run_check
from tests.conftest import debian_release

pytestmark = pytest.mark.hol

PROOFEVAL = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "proofeval"
MISSING = "Library/no_such_file.ml"


def bench(root: Path) -> Path:
    """Two problems with one answer each: one in the core, one whose context needs a file
    that no HOL Light has."""
    problems = {"core.add_0": "", "lib.missing": f'needs "{MISSING}";;\n'}
    for pid, setup in problems.items():
        d = root / "bench" / pid
        d.mkdir(parents=True)
        (d / "setup.ml").write_text(setup)
        (d / "query.txt").write_text("`!n. n + 0 = n`\n")
        (d / "answer.txt").write_text("INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]\n")
    return root / "bench"


def check_cli(tmp_path: Path, hol_dir: Path) -> subprocess.CompletedProcess[str]:
    args = ["check", str(bench(tmp_path)), "--out", str(tmp_path / "run"), "--hol-light"]
    return subprocess.run(
        [str(PROOFEVAL), *args, str(hol_dir)], capture_output=True, text=True, timeout=600
    )


def assert_one_line_input_error(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.splitlines()[-1]  # after the progress bar
    assert last.startswith("proofeval: error: ") and words in last
    assert done.stderr.count("error") == 1


# --- not a HOL Light directory: one line, exit 2, before anything boots -----------------------


def test_an_empty_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = check_cli(tmp_path, empty)
    assert_one_line_input_error(done, f"{empty} is not a HOL Light directory")


def test_hol_ml_alone_asks_for_make(tmp_path: Path) -> None:
    unbuilt = tmp_path / "hol-light"
    unbuilt.mkdir()
    (unbuilt / "hol.ml").write_text("")
    done = check_cli(tmp_path, unbuilt)
    assert_one_line_input_error(done, "run `make` in it")


# --- a built source tree (github jrh13/hol-light after `make`): the command only --------------


def fake_built_tree(root: Path, vnum: str) -> Path:
    """The files `make` leaves that the command depends on; `ocaml-hol -vnum` prints `vnum`.
    Nothing here boots: these tests check the command, not HOL Light."""
    tree = root / "hol-light"
    tree.mkdir()
    (tree / "hol.ml").write_text("")
    (tree / "pa_j.cmo").write_bytes(b"")
    toplevel = tree / "ocaml-hol"
    toplevel.write_text(f"#!/bin/sh\n{vnum}\n")
    toplevel.chmod(0o755)
    return tree


def ocamlc_version() -> str:
    return subprocess.run(["ocamlc", "-version"], capture_output=True, text=True).stdout.strip()


def test_command_only_a_built_tree_runs_as_its_hol_sh(tmp_path: Path) -> None:
    tree = fake_built_tree(tmp_path, "exec ocamlc -version")
    cmd = toplevel_command(tree)
    assert cmd[0] == str(tree / "ocaml-hol") and cmd[-2:] == ["-I", str(tree)]
    major, minor = (int(n) for n in ocamlc_version().split(".")[:2])
    # Before OCaml 4.14 hol_4.sh loads camlp5 on the command line; from 4.14 hol.ml does.
    assert ("camlp5o.cma" in cmd) == ((major, minor) < (4, 14))


def test_command_only_another_ocaml_is_named(tmp_path: Path) -> None:
    tree = fake_built_tree(tmp_path, "echo 9.9.9")
    with pytest.raises(InputError, match=f"is OCaml 9.9.9 but ocamlc is OCaml {ocamlc_version()}"):
        toplevel_command(tree)


def test_debian_layout_is_recognised() -> None:
    """Debian 12's package has its own `ocaml` toplevel; Debian 13's (HOL Light 3.0.0) is
    laid out as a built source tree, run as its `ocaml-hol`."""
    if debian_release() >= 13:
        expected = [str(DEBIAN_HOL_LIGHT / "ocaml-hol"), "-I", str(DEBIAN_HOL_LIGHT)]
    else:
        expected = [str(DEBIAN_HOL_LIGHT / "ocaml")]
    assert toplevel_command(DEBIAN_HOL_LIGHT) == expected


# --- the sandbox shows DIR even where it mounts a private tmpfs (/var/tmp) --------------------


@pytest.fixture
def linked_debian() -> Iterator[Path]:
    """A directory under /var/tmp (hidden by the sandbox's tmpfs) holding a link to every
    entry of Debian's HOL Light."""
    with tempfile.TemporaryDirectory(prefix="proofeval-test-hol-", dir="/var/tmp") as tmp:
        linked = Path(tmp) / "hol-light"
        linked.mkdir()
        for entry in DEBIAN_HOL_LIGHT.iterdir():
            (linked / entry.name).symlink_to(entry)
        yield linked


def test_a_directory_under_var_tmp_is_visible_in_the_sandbox(linked_debian: Path) -> None:
    prefix = bwrap_prefix(read_only=hol_light_paths(linked_debian))
    done = subprocess.run(
        [*prefix, "head", "-c", "20", str(linked_debian / "hol.ml")], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DEBIAN_HOL_LIGHT / "hol.ml").read_bytes()[:20]
    assert prefix.count("--ro-bind") == 2  # /usr and the linked directory; its links point to /usr


# --- one real boot: the linked directory checks a proof and names a missing file --------------


def test_a_linked_directory_checks_and_names_a_file_it_lacks(
    linked_debian: Path, tmp_path: Path
) -> None:
    settings = CheckSettings(workers=1, hol_dir=linked_debian)
    rows = run_check(
        CheckOptions(problems=bench(tmp_path), out=tmp_path / "run", settings=settings)
    )
    got = {r.problem_id: r for r in rows}
    assert got["core.add_0"].verdict == Verdict.OK
    missing = got["lib.missing"]
    assert missing.verdict == Verdict.ERROR
    assert f'needs "{MISSING}": no such file' in missing.message
    assert "too old" in missing.message and "--hol-light DIR" in missing.message
