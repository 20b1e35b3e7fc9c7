"""Emit ``msp_outlines``: what each MSP bundle declares, as plain data that imports no models.

A program learns which bundle a host needs (its methods, error registry, fingerprint, which
models and members it declares) from its outline, so it can gate and route by version while
creating only the models of the one vocabulary it reads frames with. The outline is read from
the rendered bundle module itself, so it can never disagree with it: method tables, the error
registry, every class's fields and whether each is required, and the tags of every variant
table. A bundle that declares a tagged type as one class with a closed ``type`` member (as
ingested bundles do) has that member's values as the tags of the table the union form would
have (``TurnInputPart`` -> ``TURN_INPUT_PART_VARIANTS``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from codegen.prepass import SchemaError

__all__ = ["models_of", "render_outlines"]

_HOST_REQUESTS = "HOST_REQUESTS"
_CLIENT_REQUESTS = "CLIENT_REQUESTS"
_CLIENT_NOTIFICATIONS = "CLIENT_NOTIFICATIONS"


def _assignments(module: ast.Module) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in module.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                found[target.id] = node.value
    return found


def _table_entries(value: ast.expr, name: str) -> list[tuple[str, ast.expr]]:
    """The ``{"method": Spec(...)}`` entries of a ``MappingProxyType({...})`` table."""
    if not (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Dict)):
        raise SchemaError(f"{name}: expected MappingProxyType({{...}})")
    entries: list[tuple[str, ast.expr]] = []
    for key, entry in zip(value.args[0].keys, value.args[0].values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise SchemaError(f"{name}: expected string keys")
        entries.append((key.value, entry))
    return entries


def _is_command(spec: ast.expr) -> bool:
    if not isinstance(spec, ast.Call):
        raise SchemaError("a method table entry is not a spec call")
    for keyword in spec.keywords:
        if keyword.arg == "command" and isinstance(keyword.value, ast.Constant):
            return bool(keyword.value.value)
    return False


def _field_name(statement: ast.AnnAssign) -> str | None:
    return statement.target.id if isinstance(statement.target, ast.Name) else None


def models_of(module: ast.Module) -> dict[str, dict[str, bool]]:
    """Every class of ``module``: its fields (inherited ones too), each mapped to whether it is
    required."""
    models: dict[str, dict[str, bool]] = {}
    for node in module.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, bool] = {}
        for base in node.bases:
            inherited = models.get(base.id) if isinstance(base, ast.Name) else None
            fields.update(inherited or {})
        for statement in node.body:
            name = _field_name(statement) if isinstance(statement, ast.AnnAssign) else None
            if name is not None and name != "model_config":
                fields[name] = isinstance(statement, ast.AnnAssign) and statement.value is None
        models[node.name] = fields
    return models


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _closed_tags(module: ast.Module) -> dict[str, list[str]]:
    """``X_VARIANTS`` -> the values of class ``X``'s required ``type: Literal[...]`` member, when
    it has more than one."""
    found: dict[str, list[str]] = {}
    for node in module.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if (
                isinstance(statement, ast.AnnAssign)
                and _field_name(statement) == "type"
                and statement.value is None
                and isinstance(statement.annotation, ast.Subscript)
                and isinstance(statement.annotation.value, ast.Name)
                and statement.annotation.value.id == "Literal"
            ):
                values = ast.literal_eval(statement.annotation.slice)
                if isinstance(values, tuple):  # one value: an arm of a union, not a tagged type
                    found[f"{_upper_snake(node.name)}_VARIANTS"] = sorted(str(t) for t in values)
    return found


def _outline(source: str) -> str:
    module = ast.parse(source)
    values = _assignments(module)
    version, fingerprint = values.get("HOST_VERSION"), values.get("SCHEMA_FINGERPRINT")
    if version is None or fingerprint is None:
        raise SchemaError("an MSP bundle without HOST_VERSION or SCHEMA_FINGERPRINT")
    host_requests = {
        method: _is_command(spec)
        for method, spec in _table_entries(values[_HOST_REQUESTS], _HOST_REQUESTS)
    }
    names = {
        table: sorted(method for method, _ in _table_entries(values[table], table))
        for table in (_CLIENT_REQUESTS, _CLIENT_NOTIFICATIONS)
    }
    variants = {
        name: sorted(tag for tag, _ in _table_entries(value, name))
        for name, value in values.items()
        if name.endswith("_VARIANTS")
    }
    for name, tags in _closed_tags(module).items():
        variants.setdefault(name, tags)
    errors = values.get("ERRORS")
    error_rows = ast.unparse(errors) if errors is not None else "()"
    models = models_of(module)
    return (
        "BundleOutline(\n"
        f"version={ast.unparse(version)},\n"
        f"fingerprint={ast.unparse(fingerprint)},\n"
        f"host_requests=MappingProxyType({host_requests!r}),\n"
        f"client_requests=frozenset({names[_CLIENT_REQUESTS]!r}),\n"
        f"client_notifications=frozenset({names[_CLIENT_NOTIFICATIONS]!r}),\n"
        f"errors={error_rows},\n"
        "models=MappingProxyType({"
        + "".join(f"{cls!r}: MappingProxyType({fields!r})," for cls, fields in models.items())
        + "}),\n"
        "variants=MappingProxyType({"
        + "".join(f"{name!r}: frozenset({tags!r})," for name, tags in variants.items())
        + "}),\n"
        ")"
    )


def render_outlines(bundles: Iterable[tuple[str, str]]) -> str:
    """The ``msp_outlines`` module text (before formatting) for ``(version, source)`` pairs."""
    rows = "".join(f"{version!r}: {_outline(source)},\n" for version, source in bundles)
    return (
        '"""What every MSP bundle declares, by host version, as plain data.\n\n'
        "Generated by `python -m codegen generate` from the MSP bundles; do not edit. "
        "Importing it\ncreates no models: gate and route by version with an outline, and "
        "import a bundle's\nmodule only to read frames with its models.\n"
        '"""\n\n'
        "from collections.abc import Mapping\n"
        "from types import MappingProxyType\n"
        "from typing import Final\n\n"
        "from muse_acp_wire._base import BundleOutline, ErrorSpec\n\n"
        "OUTLINES: Final[Mapping[str, BundleOutline]] = MappingProxyType({\n" + rows + "})\n"
        '"""Every MSP bundle\'s outline, oldest first, by host version."""\n'
    )
