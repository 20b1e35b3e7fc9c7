"""Post-pass over the generator's output: small AST rewrites, each asserting what it matches.

* drop the schema root class (the root only carries ``$defs``);
* refuse any class the schema did not name (no ``Foo1``/``Foo2`` ever reaches the runtime);
* rewrite dict-literal defaults on model-typed fields to ``Model.model_validate({...})``, which
  is what the generator means and what ``mypy --strict`` accepts;
* drop ``union_mode`` from fields that are not real unions (``X | None``): the generator adds it
  to every union under ``--union-mode``, and pydantic refuses it on a single-member type;
* put the provenance docstring first and splice in the method tables.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable

from codegen.config import ROOT_CLASS_NAME
from codegen.prepass import SchemaError


def _model_name_in(annotation: ast.expr, class_names: frozenset[str]) -> str:
    found = {
        node.id
        for node in ast.walk(annotation)
        if isinstance(node, ast.Name) and node.id in class_names
    }
    if len(found) != 1:
        raise SchemaError(
            f"a dict default sits on a field typed {ast.unparse(annotation)!r}; "
            "expected exactly one generated model in its annotation"
        )
    return found.pop()


def _rewrite_dict_defaults(cls: ast.ClassDef, class_names: frozenset[str]) -> int:
    rewritten = 0
    for statement in cls.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.value, ast.Dict):
            continue
        model = _model_name_in(statement.annotation, class_names)
        statement.value = ast.Call(
            func=ast.Attribute(value=ast.Name(id=model, ctx=ast.Load()), attr="model_validate"),
            args=[statement.value],
            keywords=[],
        )
        rewritten += 1
    return rewritten


def _union_members(annotation: ast.expr) -> list[ast.expr]:
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _union_members(annotation.left) + _union_members(annotation.right)
    return [annotation]


class _NeedlessUnionMode(ast.NodeTransformer):
    """Remove ``union_mode`` where fewer than two non-None members remain."""

    removed = 0

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not (isinstance(node.value, ast.Name) and node.value.id == "Annotated"):
            return node
        if not isinstance(node.slice, ast.Tuple) or not node.slice.elts:
            return node
        annotated, *extras = node.slice.elts
        members = [
            m
            for m in _union_members(annotated)
            if not (isinstance(m, ast.Constant) and m.value is None)
        ]
        if len(members) >= 2:
            return node
        kept: list[ast.expr] = []
        for extra in extras:
            if isinstance(extra, ast.Call) and any(k.arg == "union_mode" for k in extra.keywords):
                extra.keywords = [k for k in extra.keywords if k.arg != "union_mode"]
                self.removed += 1
                if not extra.keywords and not extra.args:
                    continue
            kept.append(extra)
        if not kept:
            return annotated
        node.slice.elts = [annotated, *kept]
        return node


def _tidy_docstrings(cls: ast.ClassDef) -> None:
    """Dedent class and attribute docstrings so they render as one tidy string each."""
    for statement in cls.body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            statement.value.value = inspect.cleandoc(statement.value.value)


def rewrite(
    source: str,
    *,
    class_names: frozenset[str],
    docstring: str,
    tables_source: str,
) -> str:
    """Apply every rewrite to the generator output and return the new module text."""
    module = ast.parse(source)
    roots = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == ROOT_CLASS_NAME]
    if len(roots) != 1:
        raise SchemaError(f"expected one root class {ROOT_CLASS_NAME}, found {len(roots)}")
    module.body.remove(roots[0])
    classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
    unnamed = sorted(c.name for c in classes if c.name not in class_names)
    if unnamed:
        raise SchemaError(
            "the generator produced classes the schema does not name: "
            + ", ".join(unnamed)
            + "; give each a $defs entry or make it a tagged union member"
        )
    for cls in classes:
        _rewrite_dict_defaults(cls, class_names)
        _tidy_docstrings(cls)
    module = _NeedlessUnionMode().visit(module)
    tables = ast.parse(tables_source)
    imports = [n for n in tables.body if isinstance(n, ast.Import | ast.ImportFrom)]
    body = [n for n in tables.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    last_import = max(
        (i for i, n in enumerate(module.body) if isinstance(n, ast.Import | ast.ImportFrom)),
        default=-1,
    )
    module.body[last_import + 1 : last_import + 1] = imports
    module.body.extend(body)
    module.body.insert(0, ast.Expr(ast.Constant(docstring)))
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def class_names_of(source: str) -> Iterable[str]:
    return (n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
