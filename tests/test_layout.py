"""The package's layout: imports run one way, down the layers of the flow, with no cycle;
what a prover is lives in its own package, reached only through the registry; the package
top holds only entry points and ground modules; the README's imports work.

Run on its own: pytest tests/test_layout.py (no prover needed)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "proofeval"
README = PACKAGE.parents[1] / "README.md"
DOCS = sorted((PACKAGE.parents[1] / "docs").glob("*.md"))

# Each unit (a module at the top or a subpackage) may import only units of lower layers.
LAYERS: list[set[str]] = [
    {"errors", "model"},
    {"files", "store", "timeouts", "console"},
    {"metrics", "provers"},
    {"generate"},
    {"loaders", "report", "states"},
    {"checking"},
    {"builders", "runs", "grading", "scale"},
    {"baselines", "agents"},
    {"commands"},
    {"cli", "api", "client", "__init__"},
    {"integrations"},
]
TOP_LEVEL_AT_MOST = 10


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every proofeval module `path` imports, function-local ones and those under
    `if TYPE_CHECKING:` included (a cycle of types is a cycle of meaning). `from pkg
    import name` imports the module pkg.name where there is one, else pkg."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
    return {m for m in found if m == "proofeval" or m.startswith("proofeval.")}


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        targets = set()
        for imported in _imports(path, set(files)):
            while imported not in files:  # a module outside the package's files
                imported = imported.rpartition(".")[0]
            if imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_run_down_the_layers() -> None:
    layer = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    graph = _graph()
    units = {_unit(m) for m in graph}
    assert units <= set(layer), f"units with no layer: {sorted(units - set(layer))}"
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if _unit(target) != _unit(module) and layer[_unit(target)] >= layer[_unit(module)]
    )
    assert upward == []


PROVERS = PACKAGE / "provers"
# The generic modules of provers/: what every backend offers and the registry of them.
PROVER_PACKAGES = sorted(p.parent.name for p in PROVERS.glob("*/backend.py"))
# Units that read or write one prover's own formats, and may use its modules to do so.
FORMAT_UNITS = {"builders", "loaders"}


def _prover_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["proofeval", "provers"] and len(parts) > 2 and parts[2] in PROVER_PACKAGES:
        return parts[2]
    return None


def test_every_prover_package_has_its_backend_in_the_registry() -> None:
    import importlib

    from proofeval.provers import registry

    assert PROVER_PACKAGES, "no provers/<name>/backend.py found"
    declared = [
        importlib.import_module(f"proofeval.provers.{package}.backend").BACKEND
        for package in PROVER_PACKAGES
    ]
    assert sorted(b.name for b in declared) == sorted(registry.BACKENDS)
    assert all(registry.BACKENDS[b.name] is b for b in declared)


def test_a_prover_is_reached_only_through_the_registry() -> None:
    """Outside its own package, only the registry and the units that read its formats
    import a prover's modules; no prover package imports another."""
    graph = _graph()
    wrong = []
    for module, targets in graph.items():
        own = _prover_package(module)
        for target in targets:
            package = _prover_package(target)
            if package is None or package == own:
                continue
            if module == "proofeval.provers.registry" and target.endswith(".backend"):
                continue
            if own is None and _unit(module) in FORMAT_UNITS:
                continue
            wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_package_top_holds_at_most_ten_modules() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= TOP_LEVEL_AT_MOST, top


def test_every_public_import_in_the_readme_and_the_docs_works() -> None:
    text = "\n".join(path.read_text() for path in [README, *DOCS])
    lines = re.findall(r"^ *(?:from proofeval[\w.]* import [\w, ]+|import proofeval[\w.]*)$",
                       text, flags=re.M)  # fmt: skip
    lines = sorted({line.strip() for line in lines})
    lines += ["from proofeval import Checker", "from proofeval.client import CheckClient"]
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
