"""--complicate: erase from a WhyML source the annotations that made its VCs easy for
automatic provers, as NTP4VC does: `assert { ... }`, lemma declarations (`lemma NAME:
...`), and lemma functions (`let lemma`, `let rec lemma`) with their applications.

The text is read token by token (nested comments and strings skipped, brackets and
`begin`/`match ... end` counted). An assert or an application becomes `()` (both have
type unit, so the code around stays well typed); a declaration is removed up to the next
line that starts at its own indentation or less, as declarations of a module are laid out.
What was erased is recorded by where it was: `<Module>.<function>` inside a function,
`<Module>.` at module level. If Why3 rejects the result, the build skips that source and
says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TOKEN = re.compile(r"""[A-Za-z_][\w']*|\d[\w.]*|"(?:[^"\\]|\\.)*"|\(\*\)|\(\*|\S""")
OPEN = {"(", "[", "{", "begin", "match", "try"}
CLOSE = {")", "]", "}", "end"}
IDENT = re.compile(r"[A-Za-z_][\w']*")
DECLARING = {"let", "val"}  # starts of a function declaration (module level)
DECLARATION_STARTS = {
    "let", "val", "lemma", "axiom", "goal", "function", "predicate", "type", "constant",
    "use", "clone", "scope", "end", "module", "theory", "exception", "inductive",
    "coinductive", "meta", "import", "export",
}  # fmt: skip


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    line: int
    column: int
    first: bool  # the first token of its line


def tokens(text: str) -> list[Token]:
    """The tokens of `text`, without comments (nested) and with strings as one token."""
    found: list[Token] = []
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    last_line = -1
    pos = 0
    line = 0
    while True:
        match = TOKEN.search(text, pos)
        if match is None:
            return found
        if match.group() == "(*":
            pos = _comment_end(text, match.end())
            continue
        while line + 1 < len(line_starts) and line_starts[line + 1] <= match.start():
            line += 1
        column = match.start() - line_starts[line]
        found.append(Token(match.group(), match.start(), line + 1, column, line != last_line))
        last_line = line
        pos = match.end()


def _comment_end(text: str, pos: int) -> int:
    depth = 1
    while depth and pos < len(text):
        if text.startswith("(*)", pos):
            pos += 3
        elif text.startswith("(*", pos):
            depth, pos = depth + 1, pos + 2
        elif text.startswith("*)", pos):
            depth, pos = depth - 1, pos + 2
        elif text[pos] == '"':
            end = re.compile(r'"(?:[^"\\]|\\.)*"').match(text, pos)
            pos = end.end() if end else pos + 1
        else:
            pos += 1
    return pos


@dataclass(frozen=True)
class Erasure:
    start: int  # offsets in the text
    end: int
    replacement: str
    where: str  # <Module>.<function>, or <Module>. at module level
    what: str
    names: tuple[str, ...] = ()  # the functions a lemma function's declaration erases


def complicate(source: Path, text: str) -> tuple[str, dict[str, list[str]]]:
    """The source without its asserts, lemmas and lemma functions (and their
    applications); what was erased, by where it was."""
    toks = tokens(text)
    erasures = _lemma_declarations(toks, text)
    lemma_functions = {name for e in erasures for name in e.names}
    spans = [(e.start, e.end) for e in erasures]
    erasures += _asserts(toks, spans)
    erasures += _applications(toks, lemma_functions, spans)
    erasures.sort(key=lambda e: e.start)
    pieces, pos = [], 0
    erased: dict[str, list[str]] = {}
    for e in erasures:
        pieces += [text[pos : e.start], e.replacement]
        pos = e.end
        erased.setdefault(e.where, []).append(e.what)
    pieces.append(text[pos:])
    return "".join(pieces), erased


def _context(toks: list[Token], index: int) -> str:
    """`<Module>.<function>` for the token at `index`: the last `module` before it and the
    last function declared at the start of a line, at module level, before it."""
    module, function, level = "", "", None
    for i in range(index + 1):
        t = toks[i]
        if t.text in ("module", "theory") and i + 1 < len(toks):
            module, function, level = toks[i + 1].text, "", None
        elif t.first and t.text in DECLARING and (level is None or t.column <= level):
            level = t.column
            function = _declared_name(toks, i)
        elif t.first and t.text in ("lemma", "axiom", "goal", "predicate", "function", "type"):
            if level is None or t.column <= level:
                function = ""
    return f"{module}.{function}"


def _declared_name(toks: list[Token], i: int) -> str:
    """The name a `let`/`val` declaration at `i` declares (after rec, ghost, lemma...)."""
    modifiers = {"rec", "ghost", "lemma", "function", "predicate", "partial", "constant", "val"}
    j = i + 1
    while j < len(toks) and toks[j].text in modifiers:
        j += 1
    return toks[j].text if j < len(toks) else ""


def _declaration_end(toks: list[Token], i: int, text: str) -> tuple[int, int]:
    """(end offset, index of the next token) of the declaration starting at token `i`:
    up to the next declaration keyword that starts a line outside brackets (a lemma's
    statement, a term, holds none; in a function, only one at the function's indentation
    or less counts), or the `in` of a local function, or the `end` of the module."""
    column = toks[i].column
    function = toks[i].text == "let"
    depth = lets = 0
    j = i + 1
    while j < len(toks):
        t = toks[j]
        starts = t.first and t.text in DECLARATION_STARTS and depth <= 0
        declares = t.column <= column or not function and not _term_let(toks, j)
        if starts and declares:
            if t.text != "end" or depth == 0 and _closes_module(toks, j):
                break
        if function and depth == 0 and t.text == "in":
            if lets == 0:
                j += 1  # a local lemma function: `let lemma f ... in` goes with it
                break
            lets -= 1
        lets += function and depth == 0 and t.text == "let"
        depth += t.text in OPEN
        depth -= t.text in CLOSE
        if depth < 0:
            break
        j += 1
    if j < len(toks) and toks[j - 1].text == "in":
        return toks[j - 1].start + 2, j
    if j == len(toks):
        return len(text), j
    return text.rfind("\n", 0, toks[j].start) + 1, j  # whole lines, up to the next one


def _term_let(toks: list[Token], k: int) -> bool:
    """Whether the `let` at `k` is a term's `let ... in` (its `in` comes, outside brackets,
    before any other declaration keyword starts a line) rather than a declaration."""
    if toks[k].text != "let":
        return False
    depth, lets = 0, 0
    for t in toks[k:]:
        if depth == 0 and t.first and t.text in DECLARATION_STARTS - {"let"}:
            return False
        lets += depth == 0 and t.text == "let"
        if depth == 0 and t.text == "in":
            lets -= 1
            if lets == 0:
                return True
        depth += t.text in OPEN
        depth -= t.text in CLOSE
        if depth < 0:
            return False
    return False


def _closes_module(toks: list[Token], j: int) -> bool:
    """Whether the `end` at `j` is followed by a new declaration or nothing (the end of
    a module or scope), rather than being a `match`/`begin` closer."""
    return j + 1 == len(toks) or toks[j + 1].text in DECLARATION_STARTS


def _lemma_declarations(toks: list[Token], text: str) -> list[Erasure]:
    found = []
    i = 0
    while i < len(toks):
        t = toks[i]
        lemma_function = t.text == "let" and _is_lemma_function(toks, i)
        declared = t.text == "lemma" and i + 1 < len(toks) and IDENT.fullmatch(toks[i + 1].text)
        if t.first and (declared or lemma_function):
            end, j = _declaration_end(toks, i, text)
            start = text.rfind("\n", 0, t.start) + 1  # whole lines: from its line's start
            where = _context(toks, i).split(".")[0] + "."
            if lemma_function:
                names = (_declared_name(toks, i), *_mutual(toks, i, j))
                what = f"lemma function {' and '.join(names)}"
                found.append(Erasure(start, end, "", where, what, names))
            else:
                found.append(Erasure(start, end, "", where, f"lemma {toks[i + 1].text}"))
            i = j
            continue
        i += 1
    return found


def _mutual(toks: list[Token], i: int, j: int) -> list[str]:
    """The functions declared with `with` (mutual recursion, at the indentation of the
    `let` at i) before token j."""
    names, depth = [], 0
    for k in range(i + 1, j):
        if depth == 0 and toks[k].text == "with" and toks[k].column <= toks[i].column:
            name = _declared_name(toks, k)
            names += [name] if IDENT.fullmatch(name) else []
        depth += toks[k].text in OPEN
        depth -= toks[k].text in CLOSE
    return names


def _is_lemma_function(toks: list[Token], i: int) -> bool:
    j = i + 1
    while j < len(toks) and toks[j].text in ("rec", "ghost"):
        j += 1
    return j < len(toks) and toks[j].text == "lemma"


def _inside(start: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= start < b for a, b in spans)


def _asserts(toks: list[Token], spans: list[tuple[int, int]]) -> list[Erasure]:
    found = []
    for i, t in enumerate(toks):
        if t.text != "assert" or _inside(t.start, spans):
            continue
        j = i + 1
        if j < len(toks) and toks[j].text == "{":
            close = _matching(toks, j)
            end = toks[close].start + 1
            found.append(Erasure(t.start, end, "()", _context(toks, i), f"assert at line {t.line}"))
    return found


def _matching(toks: list[Token], j: int) -> int:
    """The index of the bracket closing the one at `j`."""
    depth = 0
    for k in range(j, len(toks)):
        if toks[k].text in OPEN:
            depth += 1
        elif toks[k].text in CLOSE:
            depth -= 1
            if depth == 0:
                return k
    return len(toks) - 1


# Tokens after which a name is not applied but named (declared, or given to a meta).
NAMING = {"axiom", "lemma", "goal", "prop", "let", "rec", "val", "function", "predicate"}
# Tokens that end an application used as a statement: the expression's own end.
STOPS = {";", "in", "end", "done", "else", "then", "|", "with", "do", "->"}


def _applications(
    toks: list[Token], names: set[str], spans: list[tuple[int, int]]
) -> list[Erasure]:
    found = []
    i = 0
    while i < len(toks):
        t = toks[i]
        named = i > 0 and toks[i - 1].text in NAMING
        if t.text not in names or named or _inside(t.start, spans):
            i += 1
            continue
        depth, k = 0, i + 1
        while k < len(toks):
            text = toks[k].text
            if depth == 0 and (text in STOPS or text in CLOSE):
                break
            depth += text in OPEN
            depth -= text in CLOSE
            k += 1
        end = toks[k - 1].start + len(toks[k - 1].text)
        what = f"application of {t.text} at line {t.line}"
        found.append(Erasure(t.start, end, "()", _context(toks, i), what))
        i = k
    return found
