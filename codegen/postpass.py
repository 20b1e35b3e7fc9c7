"""Post-pass over the generator's output: small AST rewrites, each asserting what it matches.

* drop the schema root class (the root only carries ``$defs``);
* refuse any class the schema did not name (no ``Foo1``/``Foo2`` ever reaches the runtime);
* rewrite dict-literal defaults on model-typed fields to a ``default_factory`` that validates
  the dict into its model, which is what the generator means, what ``mypy --strict`` accepts,
  and builds no model while the module is imported;
* drop ``from __future__ import annotations``: annotations written as code are evaluated by the
  interpreter as the class is made, which costs far less at import than pydantic compiling each
  annotation string; the generator orders classes so that each refers to earlier ones, and an
  annotation that still refers forward (a recursive model) is quoted whole;
* give root models the deferred build that every ``WireModel`` inherits, so that importing a
  module builds no validator;
* drop ``union_mode`` from fields that are not real unions (``X | None``): the generator adds it
  to every union under ``--union-mode``, and pydantic refuses it on a single-member type;
* tag an open union of MSP (models told apart by one ``Literal`` member, then a catch-all whose
  member is any ``str``, as ``UnknownItem``): its models become a union discriminated by it,
  tried before the catch-all, which parses every value as trying them in turn did (a value only
  its own model can take, anything else the catch-all) without trying each model that fails;
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
        validate = ast.Call(
            func=ast.Attribute(value=ast.Name(id=model, ctx=ast.Load()), attr="model_validate"),
            args=[statement.value],
            keywords=[],
        )
        factory = ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=validate,
        )
        statement.value = ast.Call(
            func=ast.Name(id="Field", ctx=ast.Load()),
            args=[],
            keywords=[ast.keyword(arg="default_factory", value=factory)],
        )
        rewritten += 1
    return rewritten


def _drop_future_annotations(module: ast.Module) -> None:
    module.body = [
        node
        for node in module.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]


def _ensure_pydantic_import(module: ast.Module, name: str) -> None:
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.module == "pydantic":
            if not any(alias.name == name for alias in node.names):
                node.names.append(ast.alias(name=name))
            return
    module.body.insert(0, ast.ImportFrom(module="pydantic", names=[ast.alias(name)], level=0))


def _is_root_model(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(base, ast.Subscript)
        and isinstance(base.value, ast.Name)
        and base.value.id == "RootModel"
        for base in cls.bases
    )


def _defer_root_model(cls: ast.ClassDef) -> bool:
    """Give a root model the deferred build every ``WireModel`` inherits (a root model cannot
    inherit it); True when it was added. (Its parametrized base, ``RootModel[X]``, is a class
    pydantic builds as it is made; that one is small.)"""
    if not _is_root_model(cls):
        return False
    if any(
        isinstance(s, ast.Assign | ast.AnnAssign)
        and isinstance(t := (s.targets[0] if isinstance(s, ast.Assign) else s.target), ast.Name)
        and t.id == "model_config"
        for s in cls.body
    ):
        return False
    config = ast.Assign(
        targets=[ast.Name(id="model_config", ctx=ast.Store())],
        value=ast.Call(
            func=ast.Name(id="ConfigDict", ctx=ast.Load()),
            args=[],
            keywords=[ast.keyword(arg="defer_build", value=ast.Constant(True))],
        ),
    )
    has_docstring = (
        bool(cls.body)
        and isinstance(cls.body[0], ast.Expr)
        and isinstance(cls.body[0].value, ast.Constant)
        and isinstance(cls.body[0].value.value, str)
    )
    cls.body.insert(1 if has_docstring else 0, config)
    return True


def _names_in(node: ast.AST, candidates: frozenset[str]) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in candidates}


def _quote_forward_references(module: ast.Module, class_names: frozenset[str]) -> None:
    """Quote each field annotation that names a class not yet defined (itself included); a
    module-level alias cannot be quoted safely, so a forward one is refused."""
    defined: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and (
                    _names_in(statement.annotation, class_names) - defined
                ):
                    statement.annotation = ast.Constant(ast.unparse(statement.annotation))
            defined.add(node.name)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            value = node.value
            later = _names_in(value, class_names) - defined if value is not None else set()
            if later:
                raise SchemaError(
                    f"a module-level alias refers to {sorted(later)} before they are defined"
                )
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            defined.update(t.id for t in targets if isinstance(t, ast.Name))


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


def _bare(annotation: ast.expr) -> ast.expr:
    """``X`` of ``Annotated[X, ...]``, else the annotation itself."""
    if (
        isinstance(annotation, ast.Subscript)
        and isinstance(annotation.value, ast.Name)
        and annotation.value.id == "Annotated"
        and isinstance(annotation.slice, ast.Tuple)
    ):
        return annotation.slice.elts[0]
    return annotation


def _tags(annotation: ast.expr) -> frozenset[str] | None:
    """The values of a ``Literal`` of strings, else None."""
    bare = _bare(annotation)
    if not (
        isinstance(bare, ast.Subscript)
        and isinstance(bare.value, ast.Name)
        and bare.value.id == "Literal"
    ):
        return None
    values = bare.slice.elts if isinstance(bare.slice, ast.Tuple) else [bare.slice]
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    return frozenset(str(v.value) for v in values if isinstance(v, ast.Constant))


class _TaggedOpenUnions(ast.NodeTransformer):
    """Discriminate the models of each open union, ahead of its catch-all (module contract)."""

    def __init__(self, classes: Iterable[ast.ClassDef]) -> None:
        self.fields = {
            cls.name: {
                s.target.id: s.annotation
                for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            for cls in classes
        }
        self.tagged = 0

    def _tag_member(self, members: list[ast.expr]) -> str | None:
        """The member that tells the models apart, with a catch-all last; None if none does."""
        names = [m.id if isinstance(m, ast.Name) else "" for m in members]
        if len(names) < 3 or not all(name in self.fields for name in names):
            return None
        *models, catch_all = (self.fields[name] for name in names)
        found = []
        for member in models[0]:
            catch = _bare(catch_all.get(member, ast.Constant(None)))
            if not (isinstance(catch, ast.Name) and catch.id == "str"):
                continue  # no catch-all for this member's values
            tags = [_tags(fields[member]) if member in fields else None for fields in models]
            known = [t for t in tags if t is not None]
            if len(known) == len(tags) and sum(map(len, known)) == len(frozenset().union(*known)):
                found.append(member)  # every model's own values, none shared
        return found[0] if len(found) == 1 else None

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not (
            isinstance(node.value, ast.Name)
            and node.value.id == "Annotated"
            and isinstance(node.slice, ast.Tuple)
        ):
            return node
        annotated, *extras = node.slice.elts
        left_to_right = any(
            isinstance(extra, ast.Call)
            and any(
                k.arg == "union_mode"
                and isinstance(k.value, ast.Constant)
                and k.value.value == "left_to_right"
                for k in extra.keywords
            )
            for extra in extras
        )
        members = _union_members(annotated)
        member = self._tag_member(members) if left_to_right else None
        if member is None:
            return node
        *models, catch_all = members
        union: ast.expr = models[0]
        for model in models[1:]:
            union = ast.BinOp(left=union, op=ast.BitOr(), right=model)
        tagged = ast.Call(
            func=ast.Name(id="Field", ctx=ast.Load()),
            args=[],
            keywords=[ast.keyword(arg="discriminator", value=ast.Constant(member))],
        )
        discriminated = ast.Subscript(
            value=ast.Name(id="Annotated", ctx=ast.Load()),
            slice=ast.Tuple(elts=[union, tagged], ctx=ast.Load()),
            ctx=ast.Load(),
        )
        whole = ast.BinOp(left=discriminated, op=ast.BitOr(), right=catch_all)
        node.slice.elts = [whole, *extras]
        self.tagged += 1
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
    tag_open_unions: bool = False,
) -> str:
    """Apply every rewrite to the generator output and return the new module text; open unions
    are tagged only with ``tag_open_unions`` (MSP's, which every host event is read with)."""
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
    rewritten = deferred = 0
    for cls in classes:
        rewritten += _rewrite_dict_defaults(cls, class_names)
        deferred += _defer_root_model(cls)
        _tidy_docstrings(cls)
    if rewritten:
        _ensure_pydantic_import(module, "Field")
    if deferred:
        _ensure_pydantic_import(module, "ConfigDict")
    _drop_future_annotations(module)
    _quote_forward_references(module, class_names)
    module = _NeedlessUnionMode().visit(module)
    if tag_open_unions:
        open_unions = _TaggedOpenUnions(classes)
        module = open_unions.visit(module)
        if open_unions.tagged:
            _ensure_pydantic_import(module, "Field")
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
