"""How runtime modules import one another, read from their source: the import graph and its
circles, shared by the structure and import-cycle tests.

Every import statement counts, wherever it is (top level, function body, ``TYPE_CHECKING``);
relative imports are resolved; a package counts as its ``__init__`` module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Set as AbstractSet
from pathlib import Path

__all__ = ["cycles", "import_graph", "mentioned", "modules"]


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root``: its dotted name, file and whether it is a package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if package else parts)
        found[name] = (path, package)
    return found


def mentioned(name: str, path: Path, package: bool) -> Iterator[str]:
    """The dotted names ``name``'s import statements mention, relative ones resolved."""
    here = name if package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Which runtime modules each module under ``root`` imports."""
    found_modules = modules(root)
    return {
        name: {target for target in mentioned(name, *found) if target in found_modules} - {name}
        for name, found in found_modules.items()
    }


def cycles(graph: Mapping[str, AbstractSet[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
