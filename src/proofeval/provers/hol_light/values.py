"""The core's values an answer may apply without being compiled (native path; see
ocaml/proofeval_eval.ml): from the core's interface as `ocamlopt -i` prints it, each
value whose type is made of tactics, theorems, terms, HOL types, strings, lists, pairs
and functions, with its type's witness. The module written here is compiled against
the core, so the compiler checks every witness against the value's real type."""

from __future__ import annotations

import re

VAL = re.compile(r"val ([A-Za-z_][A-Za-z0-9_']*) : (.*)")
TOKEN = re.compile(r"\s*(->|[*()]|[A-Za-z_][A-Za-z0-9_.']*)")
W = "Proofeval_eval."
ATOMS = {
    "tactic": f"{W}Tactic",
    "thm": f"{W}Thm",
    "term": f"{W}Term",
    "hol_type": f"{W}Type",
    "string": f"{W}String",
    "conv": f"{W}Arrow ({W}Term, {W}Thm)",
    "thm_tactic": f"{W}Arrow ({W}Thm, {W}Tactic)",
}
ATOMS["thm_tactical"] = f"{W}Arrow ({ATOMS['thm_tactic']}, {ATOMS['thm_tactic']})"


class Unsupported(Exception):
    pass


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = TOKEN.match(text, pos)
        if match is None:
            raise Unsupported(text)
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def witness(type_text: str) -> str | None:
    """The OCaml expression of the witness of a type as `-i` prints it, or None."""
    try:
        tokens = _tokens(type_text)
        found, rest = _arrow(tokens)
    except (Unsupported, IndexError):
        return None
    return found if not rest else None


def _arrow(tokens: list[str]) -> tuple[str, list[str]]:
    left, rest = _pair(tokens)
    if rest and rest[0] == "->":
        right, rest = _arrow(rest[1:])
        return f"{W}Arrow ({left}, {right})", rest
    return left, rest


def _pair(tokens: list[str]) -> tuple[str, list[str]]:
    left, rest = _postfix(tokens)
    if rest and rest[0] == "*":
        right, rest = _postfix(rest[1:])
        if rest and rest[0] == "*":
            raise Unsupported("a tuple of more than two")
        return f"{W}Pair ({left}, {right})", rest
    return left, rest


def _postfix(tokens: list[str]) -> tuple[str, list[str]]:
    if tokens[0] == "(":
        inner, rest = _arrow(tokens[1:])
        if not rest or rest[0] != ")":
            raise Unsupported("unbalanced")
        found, rest = inner, rest[1:]
    elif tokens[0] in ATOMS:
        found, rest = ATOMS[tokens[0]], tokens[1:]
    else:
        raise Unsupported(tokens[0])
    while rest and rest[0] == "list":
        found, rest = f"{W}List ({found})", rest[1:]
    return found, rest


def declarations(signature: str) -> list[tuple[str, str]]:
    """Each `val NAME : TYPE` of an interface as `-i` prints it (a long type goes on over
    indented lines), in order."""
    joined = re.sub(r"\n[ \t]+", " ", signature)
    return [(m.group(1), m.group(2)) for m in map(VAL.fullmatch, joined.splitlines()) if m]


def values_module(signature: str, core: str) -> str:
    """The OCaml module that registers each of the core's values an answer may apply."""
    entries = []
    for name, type_text in declarations(signature):
        found = witness(type_text)
        if found is not None and not name.lower().startswith("proofeval"):
            entries.append(f'  ("{name}", {W}Value ({found}, {core}.{name}));\n')
    return f"let () =\n  {W}register [\n{''.join(entries)}  ];;\n"
