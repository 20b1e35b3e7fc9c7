"""Let each ingested MSP bundle import its predecessor's unchanged models instead of repeating them.

Contract: ``reuse(chain)`` takes the rendered sources of the ingested bundles, oldest first, as
``(module, source)`` pairs, and returns each source rewritten. A class, type alias or table of
a bundle is reused when its rendered text is identical to the predecessor's definition of the
same name and everything it refers to (in code or in a quoted forward reference) is reused too:
the largest such set, found as a fixpoint by dropping any definition that refers to one that
changed. A reused definition is imported from the module that defines it (``X as X``, an
explicit re-export, so ``bundle.X`` still names it) in place of its text; the version, the
fingerprint and everything changed stay. The first bundle of the chain is left whole.
Hand-written bundles are not chained: the vocabulary is one of them, and importing it must not
create another bundle's models.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from codegen.handshake import _defined_name, _is_model_definition, _mentioned

__all__ = ["reuse"]


def _definitions(module: ast.Module) -> dict[str, ast.stmt]:
    """Classes, type aliases and tables (``X: Final = ...``) by name."""
    return {
        name: node
        for node in module.body
        if (_is_model_definition(node) or isinstance(node, ast.AnnAssign))
        and (name := _defined_name(node)) is not None
    }


def _text(lines: list[str], node: ast.stmt) -> str:
    first = node.lineno - 1
    if isinstance(node, ast.ClassDef) and node.decorator_list:
        first = node.decorator_list[0].lineno - 1
    assert node.end_lineno is not None
    return "".join(lines[first : node.end_lineno])


def reused_names(previous: str, current: str) -> set[str]:
    """The definitions of ``current`` that can be imported from ``previous`` (the fixpoint)."""
    old_tree, new_tree = ast.parse(previous), ast.parse(current)
    old_lines, new_lines = previous.splitlines(keepends=True), current.splitlines(keepends=True)
    old, new = _definitions(old_tree), _definitions(new_tree)
    kept = {
        name
        for name, node in new.items()
        if name in old and _text(old_lines, old[name]) == _text(new_lines, node)
    }
    mentions = {name: _mentioned(new[name]) & set(new) for name in kept}
    while True:
        changed = {name for name in kept if not mentions[name] <= kept}
        if not changed:
            return kept
        kept -= changed


def _rewrite(source: str, imports: dict[str, list[str]]) -> str:
    """``source`` without the definitions ``imports`` names (module -> names), importing them."""
    if not imports:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    dropped = {name for names in imports.values() for name in names}
    last_import = max(
        node.end_lineno or node.lineno
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
    )
    removed: set[int] = set()
    for name, node in _definitions(tree).items():
        if name in dropped:
            first = node.lineno - 1
            if isinstance(node, ast.ClassDef) and node.decorator_list:
                first = node.decorator_list[0].lineno - 1
            assert node.end_lineno is not None
            removed.update(range(first, node.end_lineno))
    statements = "".join(
        f"from muse_acp_wire.{module} import (\n"
        + "".join(f"    {name} as {name},\n" for name in sorted(names))
        + ")\n"
        for module, names in sorted(imports.items())
    )
    head = "".join(lines[:last_import])
    body = "".join(
        line for index, line in enumerate(lines) if index >= last_import and index not in removed
    )
    return head + statements + body


def reuse(chain: Sequence[tuple[str, str]]) -> list[str]:
    """Each source of ``chain`` rewritten to import what it reuses (see the module contract)."""
    origin: dict[str, str] = {}
    rewritten: list[str] = []
    previous: str | None = None
    for module, source in chain:
        reused = reused_names(previous, source) if previous is not None else set()
        imports: dict[str, list[str]] = {}
        for name in reused:
            imports.setdefault(origin[name], []).append(name)
        rewritten.append(_rewrite(source, imports))
        origin = {
            name: origin[name] if name in reused else module
            for name in _definitions(ast.parse(source))
        }
        previous = source
    return rewritten
