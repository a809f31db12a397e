"""The library's layering, checked on its import graph.

Algorithms (encoders, counterfactuals, attributions, clemo, problems, ...) never import a chapter module
or the book runner; no module imports another of the package inside a function (the usual way to hide a
cycle); and the module-level import graph has no cycle.
"""

import ast
import importlib
from pathlib import Path

import pytest

from explainopt import chapters

LIB = Path(__file__).resolve().parents[1] / "lib"
PACKAGE = "explainopt"
TOP_LAYER = ("explainopt.chapters", "explainopt.book")


def _module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted((LIB / PACKAGE).rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _targets(module: str, node) -> list[str]:
    """Package modules an import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _resolve(module, node)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return [n for n in names if n in MODULES]


def _imports(module: str):
    """(target, inside a function?) for every import of a package module in `module`."""
    tree = ast.parse(MODULES[module].read_text())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((t, in_function) for t in _targets(module, child))
            visit(child, inside)

    visit(tree, False)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _in_top_layer(module: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in TOP_LAYER)


def test_the_module_list_is_read():
    assert {"explainopt.solvers", "explainopt.encoders.base", "explainopt.chapters"} <= set(MODULES)


@pytest.mark.parametrize("module", [m for m in MODULES if not _in_top_layer(m)])
def test_algorithms_never_import_a_chapter_or_the_runner(module):
    upward = [t for t, _ in GRAPH[module] if _in_top_layer(t)]
    assert not upward, f"{module} imports {upward}"


@pytest.mark.parametrize("module", list(MODULES))
def test_no_package_import_inside_a_function(module):
    hidden = sorted({t for t, inside in GRAPH[module] if inside})
    assert not hidden, f"{module} imports {hidden} inside a function"


def test_the_module_level_import_graph_has_no_cycle():
    edges = {m: {t for t, inside in GRAPH[m] if not inside and t != m} for m in MODULES}
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    edges = {m: {t for t in ts if not (MODULES[t].name == "__init__.py" and m.startswith(t + "."))}
             for m, ts in edges.items()}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in edges[m]:
            if state.get(t) == "open":
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in MODULES:
        if m not in state:
            visit(m)


@pytest.mark.parametrize("chapter", sorted(chapters.MODULES))
def test_every_chapter_module_offers_the_chapter_contract(chapter):
    """ARCHITECTURE.md, "The chapter contract": the same names in every chapter module, its figures apart."""
    from explainopt.verdicts import ClaimBook

    module = chapters.module(chapter)
    assert set(module.SCALES) == {"smoke", "book", "paper"}
    assert callable(module.grids) and callable(module.claims) and isinstance(module.CLAIMS, ClaimBook)
    importlib.import_module(f"{module.__name__}_figures")
