"""Obfuscate queries: reprint each goal with the type of every variable and constant.

The reprinting runs in the problem's own context (its definitions, overloads and
infixes), one warm process per context: each context is loaded once, into a fork of
the process that loaded the context it extends (contexts.py's tree), and proofeval's
printer (obfuscate.ml) is loaded once before all of them. A new text is kept only when
it parses back, in that context, to a term alpha-equivalent to the goal; otherwise the
problem keeps its query and the reason is reported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from proofeval.errors import CheckerError
from proofeval.model import Problem
from proofeval.provers.backend import SharedProcess
from proofeval.provers.hol_light import contexts
from proofeval.provers.hol_light.backend import core
from proofeval.provers.hol_light.server import WarmProcess, ocaml_string, quoted_term


@dataclass(frozen=True)
class Obfuscated:
    problem_id: str
    query: str | None  # None: not obfuscated
    reason: str = ""


def helper_path() -> Path:
    return Path(str(resources.files("proofeval.builders") / "obfuscate.ml"))


def obfuscate(
    problems: list[Problem],
    shared: SharedProcess,
    on_result: Callable[[Obfuscated], None] = lambda _r: None,
) -> list[Obfuscated]:
    """One result per problem, in the order given; `shared`: HOL Light's shared process."""
    base = core(shared)
    assert base is not None
    nodes = contexts.build(problems)
    children: dict[contexts.Node | None, list[contexts.Node]] = defaultdict(list)
    seen: set[int] = set()
    for node in nodes.values():
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            children[node.parent].append(node)
            node = node.parent
    root = base.clone()
    results: dict[str, Obfuscated] = {}
    try:
        # a copy in the work directory: the sandbox shows nothing of the installation
        root.load(root.launcher.scratch_file("obfuscate", helper_path().read_text()), "")
    except BaseException:
        root.close()
        raise
    _Walker(children, results, on_result).walk(root)
    return [results[p.id] for p in problems]


@dataclass
class _Walker:
    """Loads the tree depth first; a node's process goes on to load its last child, so
    a chain of contexts (one file's problems) takes one process, not one per problem."""

    children: dict
    results: dict[str, Obfuscated]
    on_result: Callable[[Obfuscated], None]

    def walk(self, root: WarmProcess) -> None:
        stack: list[tuple[contexts.Node | None, WarmProcess]] = [(None, root)]
        try:
            while stack:
                node, proc = stack.pop()
                failure = "" if node is None else self._load(node, proc)
                if node is not None:
                    for problem in node.problems.values():
                        self._add(problem, reprint(problem, proc) if not failure else None, failure)
                kids = self.children[node]
                if failure or not kids:
                    if failure:
                        self._fail_below(node, failure)
                    proc.close()
                    continue
                stack.extend((kid, proc.clone()) for kid in kids[:-1])
                stack.append((kids[-1], proc))
        finally:
            for _, proc in stack:
                proc.close()

    def _load(self, node: contexts.Node, proc: WarmProcess) -> str:
        try:
            contexts.load(node, proc)
        except CheckerError as exc:
            return str(exc)
        return ""

    def _add(self, problem: Problem, result: Obfuscated | None, failure: str) -> None:
        result = result or Obfuscated(problem.id, None, failure)
        self.results[problem.id] = result
        self.on_result(result)

    def _fail_below(self, node: contexts.Node | None, failure: str) -> None:
        pending = list(self.children[node])
        while pending:
            child = pending.pop()
            for problem in child.problems.values():
                self._add(problem, None, failure)
            pending.extend(self.children[child])


def reprint(problem: Problem, proc: WarmProcess) -> Obfuscated:
    """The query reprinted; it is parsed as the term it quotes, never run as code."""
    term = quoted_term(problem.statement)
    if term is None:
        return Obfuscated(problem.id, None, "the query is not one term in backquotes")
    try:
        reply = proc.eval_string(f"proofeval_obfuscate (parse_term {ocaml_string(term)})")
    except CheckerError as exc:
        return Obfuscated(problem.id, None, f"the query does not parse: {exc}")
    status, _, text = reply.partition("\n")
    if status == "OK":
        return Obfuscated(problem.id, text)
    return Obfuscated(problem.id, None, text)
