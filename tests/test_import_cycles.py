"""No import cycles between cockpit's modules.

Every module under cockpit/ is parsed (never imported) for the imports it runs when it is loaded:
`import x`, `from x import y`, relative imports, at module level and in class bodies, under `if`,
`try` and `with`, but not inside functions (a lazy import runs later, by design) and not under
`if TYPE_CHECKING:` (annotations only). The edges between cockpit's own modules must form no
cycle; a failure names each cycle as a chain of modules.

A parent package is not an edge of its own: `from cockpit.a.b import c` loads cockpit/a/__init__
first, which is Python's order for any package and is not a cycle the code chose.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cockpit"


def module_names() -> dict[str, Path]:
    """Dotted module name -> file, for every .py under cockpit/ (a package is its __init__)."""
    names: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def load_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when a module with this body is loaded."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += load_time_imports(node.body)
            found += load_time_imports(node.orelse)
        elif isinstance(node, ast.ClassDef):
            found += load_time_imports(node.body)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody):
                found += load_time_imports(block)
            for handler in node.handlers:
                found += load_time_imports(handler.body)
        elif isinstance(node, ast.With | ast.AsyncWith | ast.For | ast.While):
            found += load_time_imports(node.body)
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph() -> dict[str, set[str]]:
    """cockpit module -> the cockpit modules it imports at load time."""
    names = module_names()
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in load_time_imports(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _resolve(name, path.name == "__init__.py", node)
                # `from pkg import sub` loads the module pkg.sub; `from mod import name` loads mod
                subs = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in names]
                targets = subs if len(subs) == len(node.names) else [source, *subs]
            graph[name].update(t for t in targets if t in names and t != name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a chain that returns to its start) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph is a few hundred nodes
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)

    cycles = []
    for group in groups:
        start = min(group)
        # breadth-first from start back to start, inside the group: the shortest such chain
        paths = {start: [start]}
        queue = [start]
        cycle: list[str] | None = None
        while queue and cycle is None:
            v = queue.pop(0)
            for w in sorted(graph[v] & group):
                if w == start:
                    cycle = [*paths[v], start]
                    break
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        assert cycle is not None
        cycles.append(cycle)
    return cycles


def test_the_graph_sees_cockpits_modules_and_their_imports():
    graph = import_graph()
    assert "cockpit.cli.main" in graph and "cockpit.harness.judge" in graph
    assert "cockpit.cli.common" in graph["cockpit.cli.main"]
    assert "cockpit.cli.main" in graph["cockpit.cli"]


def test_find_cycles_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_lazy_and_type_checking_imports_are_not_edges():
    tree = ast.parse(
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import cockpit.a\nelse:\n    import cockpit.b\n"
        "def f():\n    import cockpit.c\n"
        "class K:\n    import cockpit.d\n"
        "try:\n    import cockpit.e\nexcept ImportError:\n    import cockpit.f\n"
    )
    names = [a.name for n in load_time_imports(tree.body) for a in n.names]
    assert names == ["os", "TYPE_CHECKING", "cockpit.b", "cockpit.d", "cockpit.e", "cockpit.f"]


def test_relative_imports_resolve():
    node = ast.parse("from ..store import events").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve("cockpit.engine.engine", False, node) == "cockpit.store"
    assert _resolve("cockpit.engine", True, node) == "cockpit.store"


def test_no_import_cycles_between_cockpit_modules():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles between cockpit's modules:\n" + "\n".join(
        " -> ".join(c) for c in cycles
    )
