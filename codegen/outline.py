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

__all__ = ["models_of", "render_outline", "render_outlines"]

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


def _parts(source: str) -> tuple[dict[str, str], dict[str, dict[str, bool]]]:
    """The outline of a bundle's ``source``: each ``BundleOutline`` member but ``models`` as the
    text of its value, and the models."""
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
    parts = {
        "version": ast.unparse(version),
        "fingerprint": ast.unparse(fingerprint),
        "host_requests": f"MappingProxyType({host_requests!r})",
        "client_requests": f"frozenset({names[_CLIENT_REQUESTS]!r})",
        "client_notifications": f"frozenset({names[_CLIENT_NOTIFICATIONS]!r})",
        "errors": ast.unparse(errors) if errors is not None else "()",
        "variants": "MappingProxyType({"
        + "".join(f"{name!r}: frozenset({tags!r})," for name, tags in variants.items())
        + "})",
    }
    return parts, models_of(module)


def _fields(fields: dict[str, bool]) -> str:
    return f"MappingProxyType({fields!r})"


def render_outline(source: str, previous: tuple[str, str] | None) -> str:
    """The module of one bundle's outline (before formatting). With ``previous`` (the module
    and source of the bundle it follows), every member equal to that bundle's is taken from
    its outline, and ``models`` holds only the models that changed or appeared (less those
    gone)."""
    parts, models = _parts(source)
    header = (
        f'"""What MSP bundle {ast.literal_eval(parts["version"])} declares, as plain data '
        "(``msp_outlines`` finds it by version).\n\n"
        'Generated by `python -m codegen generate` from the bundle; do not edit.\n"""\n\n'
        "from types import MappingProxyType\n"
        "from typing import Final\n\n"
        "from muse_acp_wire._base import BundleOutline, ErrorSpec\n"
    )
    members = dict(parts)
    every_model = "".join(f"{cls!r}: {_fields(fields)}," for cls, fields in models.items())
    members["models"] = "MappingProxyType({" + every_model + "})"
    if previous is not None:
        module, earlier_source = previous
        earlier, earlier_models = _parts(earlier_source)
        header += f"from muse_acp_wire.{module} import OUTLINE as _PREVIOUS\n"
        for name in ("host_requests", "client_requests", "client_notifications", "errors"):
            if parts[name] == earlier[name]:
                members[name] = f"_PREVIOUS.{name}"
        if parts["variants"] == earlier["variants"]:
            members["variants"] = "_PREVIOUS.variants"
        gone = sorted(set(earlier_models) - set(models))
        # Spelled in sorted order: a set's repr follows string hashing, which differs by run.
        spelled = "{" + ", ".join(map(repr, gone)) + "}"
        kept = (
            f"{{m: f for m, f in _PREVIOUS.models.items() if m not in {spelled}}}"
            if gone
            else "_PREVIOUS.models"
        )
        changed = "".join(
            f"{cls!r}: {_fields(fields)},"
            for cls, fields in models.items()
            if earlier_models.get(cls) != fields
        )
        members["models"] = f"MappingProxyType({{**{kept}, {changed}}})"
    body = "".join(f"{name}={value},\n" for name, value in members.items())
    return header + "\nOUTLINE: Final = BundleOutline(\n" + body + ")\n"


def render_outlines(modules: Iterable[tuple[str, str]]) -> str:
    """The ``msp_outlines`` module text (before formatting): ``(version, outline module)``."""
    rows = "".join(f"{version!r}: 'muse_acp_wire.{module}',\n" for version, module in modules)
    return (
        '"""What every MSP bundle declares, by host version, as plain data.\n\n'
        "Generated by `python -m codegen generate` from the MSP bundles; do not edit. "
        "Importing it\ncreates no models and reads no outline: each is imported from its own "
        "module when first\nlooked up. Gate and route by version with an outline, and import "
        "a bundle's module only\nto read frames with its models.\n"
        '"""\n\n'
        "from collections.abc import Mapping\n"
        "from typing import Final\n\n"
        "from muse_acp_wire._base import BundleOutline, LazyOutlines\n\n"
        "OUTLINES: Final[Mapping[str, BundleOutline]] = LazyOutlines({\n" + rows + "})\n"
        '"""Every MSP bundle\'s outline, oldest first, by host version."""\n'
    )
