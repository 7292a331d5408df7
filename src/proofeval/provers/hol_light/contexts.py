"""The tree of contexts to load: every distinct context, and every shared prefix, once.

Problems of one source file have contexts that are prefixes of one another (each adds
the previous problem, admitted); files that load the same base share a long prefix. A
node is a context text (or a prefix shared by several), loaded into a fork of its
parent node's warm process, which has already loaded everything before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proofeval.errors import InputError
from proofeval.model import Problem

if TYPE_CHECKING:
    from proofeval.provers.hol_light.server import WarmProcess

BLOCK = 4096


@dataclass(eq=False)
class Node:
    text: str
    directory: str
    parent: Node | None
    problems: dict[str, Problem] = field(default_factory=dict)
    loaded: str | None = None  # what its process holds, once loaded (see `load`)

    @property
    def extendable(self) -> bool:
        """Whether loading more text after this node is the same as loading it all:
        only at the end of a phrase."""
        return self.text == "" or self.text.rstrip().endswith(";;")

    def remainder(self) -> str:
        """The text to load on top of the parent's process."""
        if self.parent is None:
            return self.text
        below = self.parent.text if self.parent.loaded is None else self.parent.loaded
        return self.text[len(below) :]


def load(node: Node, proc: WarmProcess, memory_mb: int | None = None) -> None:
    """Load `node` into `proc`, a fork of its parent's process, within `memory_mb` (see
    WarmProcess.load). A shared prefix is cut at a ';;', which may be inside a module, a
    comment or a string: then it does not parse as whole phrases, is not loaded, and its
    children load its text with their own."""
    text = node.remainder()
    node.loaded = node.text
    if not text.strip():
        return
    path = proc.launcher.scratch_file("context", text)
    if not node.problems:
        try:
            proc.split(path)
        except InputError:
            node.loaded = node.text[: len(node.text) - len(text)]
            return
    proc.load(path, node.directory, memory_mb=memory_mb)


def common_prefix_length(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    n = 0
    while n < limit and a[n : n + BLOCK] == b[n : n + BLOCK]:
        n += BLOCK
    n = min(n, limit)
    while n < limit and a[n] == b[n]:  # within the first block that differs
        n += 1
    return n


def last_phrase_end(text: str, n: int) -> int:
    """The largest position <= n after a `;;` and the white space that follows it
    (0 if there is none)."""
    j = text.rfind(";;", 0, n)
    if j < 0:
        return 0
    end = j + 2
    while end < n and text[end].isspace():
        end += 1
    return end


def build(problems: Iterable[Problem]) -> dict[str, Node]:
    """The node of each problem's context, by problem id."""
    groups: dict[str, list[Problem]] = defaultdict(list)
    for p in problems:
        groups[p.directory].append(p)
    nodes: dict[str, Node] = {}
    for directory, members in groups.items():
        nodes.update(_build_group(directory, members))
    return nodes


def _build_group(directory: str, members: list[Problem]) -> dict[str, Node]:
    headers = sorted({p.header for p in members})
    texts = set(headers) | {""}
    for a, b in zip(headers, headers[1:], strict=False):
        texts.add(a[: last_phrase_end(a, common_prefix_length(a, b))])
    by_text: dict[str, Node] = {}
    stack: list[Node] = []
    for text in sorted(texts):
        while stack and not text.startswith(stack[-1].text):
            stack.pop()
        node = Node(text, directory, stack[-1] if stack else None)
        by_text[text] = node
        if node.extendable:
            stack.append(node)
    for p in members:
        by_text[p.header].problems[p.id] = p
    return {p.id: by_text[p.header] for p in members}
