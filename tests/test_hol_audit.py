"""Layer 1 on a principle: every value an answer can reach through an allowed module is
type-safe and bounds-checked.

tests/ocaml/audit_allowed.ml reads the compiled interfaces (.cmi) of the modules on the
deny-list's allow-list with compiler-libs and reports each value that returns a type no
argument carries (a coercion: Parsing.peek_val was an Obj.magic made of allowed names)
or runs an engine over tables the caller made (Lexing.engine), and whether the
deny-list refuses it. Each one must be refused, or reviewed below with the reason it is
safe: an OCaml update that adds one fails here instead of opening a hole silently.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proofeval.provers.hol_light.build import (
    COMPAT,
    _source_dir,
    copy_compat,
    ocaml_major_minor,
)

pytestmark = pytest.mark.hol

AUDIT = Path(__file__).parent / "ocaml" / "audit_allowed.ml"

RAISES = "never returns: it raises"
EMPTY = "what it returns holds no value of the free type (an empty container, one side of a sum)"
# Found by the audit and read in OCaml 4.13's sources: (value, kind) -> why it is safe.
REVIEWED = {
    **{(f"{m}.{f}", "coercion"): RAISES for m in ("Stdlib", "Pervasives")
       for f in ("failwith", "invalid_arg", "raise", "raise_notrace")},
    **{(v, "coercion"): EMPTY for v in (
        "Either.left", "Either.right", "Result.ok", "Result.error", "Option.none", "Seq.empty",
        "Queue.create", "Stack.create", "Hashtbl.create", "MoreLabels.Hashtbl.create")},
}  # fmt: skip


@pytest.fixture(scope="module")
def audit_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("ocamlfind") is None:
        pytest.fail("ocamlfind is missing: run `make install`")
    out = tmp_path_factory.mktemp("audit")
    for source in (_source_dir() / "proofeval_deny.ml", AUDIT):
        shutil.copy(source, out / source.name)
    copy_compat(_source_dir(), out)
    types = "audit_types_5_3.ml" if ocaml_major_minor() >= (5, 3) else "audit_types_4_13.ml"
    shutil.copy(AUDIT.parent / types, out / "audit_types.ml")
    cmd = ["ocamlfind", "ocamlc", "-package", "compiler-libs.common", "-linkpkg",
           f"{COMPAT}.ml", "proofeval_deny.ml", "audit_types.ml", AUDIT.name,
           "-o", "audit"]  # fmt: skip
    subprocess.run(cmd, cwd=out, check=True, capture_output=True)
    return out / "audit"


def run_audit(program: Path, *extra: str) -> list[list[str]]:
    done = subprocess.run([str(program), *extra], capture_output=True, text=True, check=True)
    return [line.split("\t") for line in done.stdout.splitlines()]


def test_no_allowed_module_exports_a_coercion_or_an_engine_over_caller_made_tables(
    audit_program: Path,
) -> None:
    rows = run_audit(audit_program)
    assert rows, "the audit read no interface"
    absent = [r[1] for r in rows if r[0] == "absent"]
    assert absent == (["Pervasives"] if ocaml_major_minor() >= (5, 0) else []), (
        f"allowed modules with no interface: {absent} (OCaml 5.0 removed Pervasives)"
    )
    found = {(r[1], r[2]): r for r in rows if r[0] == "value"}
    unsafe = [r for key, r in found.items() if r[3] == "reachable" and key not in REVIEWED]
    assert not unsafe, f"values an answer can reach that break type or memory safety: {unsafe}"
    stale = [key for key in REVIEWED if key not in found and key[0].split(".")[0] not in absent]
    assert not stale, f"reviewed values the audit no longer finds (review again): {stale}"


def test_every_module_an_allowed_module_names_is_denied_or_audited(audit_program: Path) -> None:
    """Stdlib.Obj is an alias of Stdlib__Obj: reachable unless the alias is refused."""
    aliases = [r for r in run_audit(audit_program) if r[0] == "alias"]
    assert any(r[1] == "Stdlib.Obj" and r[3] == "denied" for r in aliases)
    assert [r for r in aliases if r[3] not in ("denied", "audited")] == []


def test_the_audit_finds_the_values_that_broke_layer_1(audit_program: Path) -> None:
    """Run on modules the deny-list refuses, the audit flags what made them unsafe (so it
    would have caught Parsing and Lexing), and the deny-list refuses each one."""
    rows = run_audit(audit_program, "Parsing", "Lexing", "Obj", "Marshal")
    flagged = {(r[1], r[2]): r[3] for r in rows if r[0] == "value"}
    for key in [
        ("Parsing.peek_val", "coercion"),
        ("Parsing.yyparse", "coercion"),
        ("Parsing.yyparse", "table"),
        ("Lexing.engine", "table"),
        ("Lexing.new_engine", "table"),
        ("Obj.magic", "coercion"),
        ("Marshal.from_string", "coercion"),
    ]:
        assert flagged.get(key) == "denied", (key, flagged.get(key))
