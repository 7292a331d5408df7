"""The rule for headers a service's clients send (provers/hol_light/headers.py), alone: no
prover runs. A HOL Light header is code; a client's is admitted only as loads of HOL
Light's own files, by absolute path. Each case is a way to smuggle code or another file
past that rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofeval.errors import InputError
from proofeval.provers.hol_light.headers import admitted
from proofeval.provers.interface import CheckSettings
from proofeval.provers.registry import client_header


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOL Light directory with two library files, and a file beside it."""
    (tmp_path / "hol" / "Library").mkdir(parents=True)
    (tmp_path / "hol" / "Library" / "binary.ml").write_text("let x = 1;;\n")
    (tmp_path / "hol" / "Library" / "iter.ml").write_text("let y = 2;;\n")
    (tmp_path / "outside.ml").write_text('Sys.command "x";;\n')
    (tmp_path / "hol" / "Library" / "escape.ml").symlink_to(tmp_path / "outside.ml")
    return tmp_path / "hol"


def test_loads_of_the_installation_are_admitted_by_absolute_path(home: Path) -> None:
    header = 'needs "Library/binary.ml";;\n\n  loadt "Library/iter.ml" ;; loads "Library/iter.ml";;'
    library = home.resolve() / "Library"
    assert admitted(header, home) == (
        f'needs "{library}/binary.ml";;\nloadt "{library}/iter.ml";;\nloads "{library}/iter.ml";;\n'
    )
    assert admitted("", home) == "" and admitted("\n  \n", home) == ""


@pytest.mark.parametrize(
    "header",
    [
        'needs "Library/binary.ml";; Sys.command "rm -rf /";;',  # code after a load
        'let _ = needs "Library/binary.ml";;',
        'needs ("Library/binary.ml");;',
        'needs "Library/" ^ "binary.ml";;',
        'needs "Library/binary.ml"',  # no end of phrase: the next phrase would be glued on
        'needs "Library/binary.ml";; (* a comment *)',
        '(* needs *) needs "Library/binary.ml";;',
        'needs "Library/binary.ml";;;;',
        '#use "Library/binary.ml";;',
        'needs "Library/bin\\097ry.ml";;',  # an escape in the string
        'needs "Library/binary.ml\\";; Sys.command \\"x";;',
        "needs`Library/binary.ml`;;",
        'Needs "Library/binary.ml";;',
        'needs "Library/binary.ml";;\x00',
        'needs "Library/binary.ml";;\u00a0Sys.command "x";;',
    ],
)
def test_anything_but_loads_is_refused(home: Path, header: str) -> None:
    with pytest.raises(InputError, match="may only load HOL Light's own files"):
        admitted(header, home)


@pytest.mark.parametrize(
    "name",
    [
        "../outside.ml",  # out of the directory
        "Library/../../outside.ml",
        "Library/escape.ml",  # a link that leads out
        "Library/missing.ml",
        "Library",  # a directory
        "context-1.ml",  # what proofeval writes in the working directory, not HOL Light's
    ],
)
def test_a_file_that_is_not_the_installations_is_refused(home: Path, name: str) -> None:
    with pytest.raises(InputError, match="not a file of|may only load"):
        admitted(f'needs "{name}";;', home)


def test_absolute_and_dollar_paths_do_not_match_the_rule(home: Path) -> None:
    for name in (str(home / "Library" / "binary.ml"), "$/Library/binary.ml"):
        with pytest.raises(InputError):
            admitted(f'needs "{name}";;', home)


def test_a_header_loads_at_most_a_hundred_files(home: Path) -> None:
    admitted('needs "Library/iter.ml";;' * 100, home)
    with pytest.raises(InputError, match="at most 100"):
        admitted('needs "Library/iter.ml";;' * 101, home)


def test_the_registry_applies_each_provers_rule(home: Path) -> None:
    settings = CheckSettings(hol_dir=home)
    code = "let proofeval_x = 1;;"
    with pytest.raises(InputError):
        client_header("hol-light", code, settings)
    with pytest.raises(InputError):
        client_header("hol", code, settings)  # an alias is the same prover
    assert client_header("hol-light", 'needs "Library/iter.ml";;', settings).startswith("needs")
    # Coq's headers are vernacular, sent on as they are; an unknown prover's are the
    # checker's ERROR, not this rule's
    assert client_header("coq", "Require Import Arith.", settings) == "Require Import Arith."
    assert client_header("hol_light", code, settings) == code
