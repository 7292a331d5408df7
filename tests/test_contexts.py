"""The context tree: each distinct context and each shared prefix is a node, loaded once."""

from __future__ import annotations

import pytest

from proofeval.model import Problem
from proofeval.provers.hol_light.contexts import build, common_prefix_length, load
from proofeval.provers.hol_light.server import WarmProcess

BASE = 'needs "base.ml";;\n'
ADMIT_A = "let A = prove(`T`, CHEAT_TAC);;\n"


def problem(pid: str, header: str, directory: str = "") -> Problem:
    return Problem(id=pid, statement="`T`", header=header, directory=directory)


def test_common_prefix_length_across_blocks() -> None:
    a = "x" * 10000 + "abc"
    assert common_prefix_length(a, "x" * 10000 + "abd") == 10002
    assert common_prefix_length(a, a) == len(a)
    assert common_prefix_length("", a) == 0


def test_problems_of_one_file_form_a_chain() -> None:
    nodes = build([problem("p1", BASE), problem("p2", BASE + ADMIT_A)])
    assert nodes["p2"].parent is nodes["p1"]
    assert nodes["p2"].remainder() == ADMIT_A
    assert nodes["p1"].parent is not None and nodes["p1"].parent.text == ""


def test_files_sharing_a_base_fork_from_one_node() -> None:
    one = BASE + 'needs "one.ml";;\n'
    two = BASE + 'needs "two.ml";;\n'
    nodes = build([problem("a", one), problem("b", two)])
    shared = nodes["a"].parent
    assert shared is nodes["b"].parent
    assert shared is not None and shared.text == BASE
    assert shared.problems == {}


def test_a_prefix_that_ends_mid_phrase_is_not_extended() -> None:
    nodes = build([problem("short", "let x = 1"), problem("long", "let x = 12;;\n")])
    assert nodes["long"].parent is not None and nodes["long"].parent.text == ""


def test_directories_do_not_share() -> None:
    nodes = build([problem("a", BASE, "/d1"), problem("b", BASE, "/d2")])
    assert nodes["a"] is not nodes["b"]
    assert nodes["a"].directory == "/d1"


def test_one_node_per_distinct_context() -> None:
    nodes = build([problem("a", BASE), problem("b", BASE)])
    assert nodes["a"] is nodes["b"]
    assert set(nodes["a"].problems) == {"a", "b"}


@pytest.mark.parametrize(
    "shared",
    [
        "module Mod = struct\n  let one = 1;;\n  let two = 2\nend\nlet two = Mod.two\n",
        "(* one;; two *)\nlet two = 2\n",
        'let s = "one;; two"\nlet two = 2\n',
    ],
)
def test_a_shared_prefix_cut_inside_a_phrase_is_loaded_by_its_children(
    hol_base: WarmProcess, shared: str
) -> None:
    """The tree cuts shared prefixes at the last ';;', which need not end a phrase."""
    nodes = build([problem("a", shared + "let a = 1;;\n"), problem("b", shared + "let b = 2;;\n")])
    cut = nodes["a"].parent
    assert cut is not None and cut is nodes["b"].parent and ";;" in cut.text
    at_cut = hol_base.clone()
    try:
        load(cut, at_cut)
        assert cut.loaded == ""  # it does not parse alone: left to its children
        for pid, total in (("a", "3"), ("b", "4")):
            proc = at_cut.clone()
            try:
                load(nodes[pid], proc)
                assert proc.eval_string(f"string_of_int ({pid} + two)") == total
            finally:
                proc.close()
    finally:
        at_cut.close()


def test_a_shared_prefix_of_whole_phrases_is_loaded_once(hol_base: WarmProcess) -> None:
    shared = "let one = 1;;\nlet two = 2;;\n"
    nodes = build([problem("a", shared + "let a = 1;;\n"), problem("b", shared + "let b = 2;;\n")])
    cut = nodes["a"].parent
    assert cut is not None and cut.text == shared
    at_cut = hol_base.clone()
    try:
        load(cut, at_cut)
        assert cut.loaded == shared and at_cut.eval_string("string_of_int two") == "2"
        assert nodes["a"].remainder() == "let a = 1;;\n"
    finally:
        at_cut.close()
