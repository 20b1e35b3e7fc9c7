"""Emit the vocabulary tables of one generated module: methods, unions, variants and errors.

* The method tables map each wire method to its params and result models, grouped by the side
  that handles the message (``AGENT_REQUESTS``, ``CLIENT_NOTIFICATIONS``, ``HOST_REQUESTS``,
  ...), so routers are built from typed data instead of method-name strings.
* Every union definition whose members are all models becomes a named alias
  (``ContentBlock: TypeAlias = TextContentBlock | ...``; the generator itself inlines unions
  at the fields that use them), and every union whose members carry a constant tag also gets
  a table from tag value to model (``ITEM_VARIANTS["toolCall"] is ToolCallItem``); a catch-all
  member without a constant tag belongs to the alias but not to the table.
* Every closed string enum definition becomes a ``Literal`` alias (``StopReason``).
* For MSP, the error registry (``ERRORS``) and the code of each error kind (``ERROR_CODES``).
"""

from __future__ import annotations

import re
from typing import Any

from codegen.prepass import JsonObject, PreparedSchema, SchemaError


def _class_of(ref_holder: Any, where: str) -> str:
    if not isinstance(ref_holder, dict) or not str(ref_holder.get("$ref", "")).startswith(
        "#/$defs/"
    ):
        raise SchemaError(f"{where}: expected {{'$ref': '#/$defs/<Name>'}}")
    return str(ref_holder["$ref"]).removeprefix("#/$defs/")


def _side_of(spec: Any, where: str) -> str:
    side = spec.get("handledBy") if isinstance(spec, dict) else None
    if not isinstance(side, str) or not side.isalpha():
        raise SchemaError(f"{where}: handledBy must name a side")
    return side.upper()


def _upper_snake(name: str) -> str:
    """``TurnInputPart`` -> ``TURN_INPUT_PART``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _member_class(member: Any, union: str) -> str | None:
    """The class a union member becomes, or None when it is not a model (a bare string)."""
    if not isinstance(member, dict):
        raise SchemaError(f"$defs/{union}: union members must be objects")
    if "$ref" in member:
        return _class_of(member, f"$defs/{union}")
    title = member.get("title")
    return title if isinstance(title, str) and member.get("type") == "object" else None


def _tag_of(definition: JsonObject, prepared: PreparedSchema, cls: str, member: Any) -> Any:
    """The constant tag value of one union member (None for a catch-all)."""
    body = prepared.schema["$defs"].get(cls) if "$ref" in member else member
    properties = body.get("properties", {}) if isinstance(body, dict) else {}
    discriminator = definition.get("discriminator")
    names = [discriminator["propertyName"]] if isinstance(discriminator, dict) else properties
    for name in names:
        const = properties.get(name, {}).get("const")
        if isinstance(const, str):
            return (name, const)
    return None


def _unions(prepared: PreparedSchema, defined: frozenset[str]) -> list[str]:
    """Alias and variant-table lines for every union whose members are all models and that the
    generator did not already turn into a class of its own (``defined``)."""
    lines: list[str] = []
    for name, definition in prepared.schema["$defs"].items():
        members = definition.get("oneOf") or definition.get("anyOf")
        if not isinstance(members, list) or name in defined:
            continue
        classes = [_member_class(member, name) for member in members]
        if any(cls is None for cls in classes) or len(classes) < 2:
            continue
        named = [cls for cls in classes if cls is not None]
        lines.append(f"{name}: TypeAlias = {' | '.join(named)}")
        tags = [
            _tag_of(definition, prepared, cls, member)
            for cls, member in zip(named, members, strict=True)
        ]
        tagged = [(tag, cls) for tag, cls in zip(tags, named, strict=True) if tag is not None]
        if len({tag[0] for tag, _ in tagged}) != 1 or len(tagged) < len(named) - 1:
            continue  # not one tag shared by all (a catch-all aside): no variant table
        table = _upper_snake(name) + "_VARIANTS"
        lines.append(f"{table}: Final[Mapping[str, type[{name}]]] = MappingProxyType({{")
        lines.extend(f"{tag[1]!r}: {cls}," for tag, cls in tagged)
        lines.append("})")
    return lines


def _enums(prepared: PreparedSchema, defined: frozenset[str]) -> list[str]:
    """A ``Literal`` alias for every closed string enum definition."""
    lines: list[str] = []
    for name, definition in prepared.schema["$defs"].items():
        values = definition.get("enum")
        if name in defined or definition.get("type") != "string" or not isinstance(values, list):
            continue
        if not all(isinstance(value, str) for value in values):
            raise SchemaError(f"$defs/{name}: a string enum may only list strings")
        lines.append(f"{name}: TypeAlias = Literal[{', '.join(repr(v) for v in values)}]")
    return lines


def emit(
    prepared: PreparedSchema, *, constants: dict[str, str], defined: frozenset[str] = frozenset()
) -> str:
    """Return Python source defining the tables; constants become ``Final[str]`` names.

    ``defined`` names the classes the generator produced, which unions must not shadow."""
    lines = [
        "from collections.abc import Mapping",
        "from types import MappingProxyType",
        "from typing import Final, Literal, TypeAlias",
        "from muse_acp_wire._base import ErrorSpec, NotificationSpec, RequestSpec",
    ]
    for name, value in constants.items():
        lines.append(f"{name}: Final = {value!r}")
    requests: dict[str, list[str]] = {}
    for method, spec in prepared.methods.items():
        where = f"methods[{method!r}]"
        params = _class_of(spec["params"], where) if "params" in spec else "None"
        result = _class_of(spec.get("result"), where)
        command = bool(spec.get("command", False))
        entry = f"{method!r}: RequestSpec({method!r}, {params}, {result}, command={command}),"
        requests.setdefault(_side_of(spec, where), []).append(entry)
    notifications: dict[str, list[str]] = {}
    for method, spec in prepared.notifications.items():
        where = f"notifications[{method!r}]"
        params = _class_of(spec["params"], where) if "params" in spec else "None"
        entry = f"{method!r}: NotificationSpec({method!r}, {params}),"
        notifications.setdefault(_side_of(spec, where), []).append(entry)
    for kind, table, spec_type in (
        ("REQUESTS", requests, "RequestSpec"),
        ("NOTIFICATIONS", notifications, "NotificationSpec"),
    ):
        for side in sorted(table):
            lines.append(f"{side}_{kind}: Final[Mapping[str, {spec_type}]] = MappingProxyType({{")
            lines.extend(table[side])
            lines.append("})")
    lines.extend(_enums(prepared, defined))
    lines.extend(_unions(prepared, defined))
    if prepared.errors:
        lines.append("ERRORS: Final[tuple[ErrorSpec, ...]] = (")
        for row in prepared.errors:
            retryable = row.get("retryable")
            lines.append(
                f"ErrorSpec({int(row['code'])}, {str(row['kind'])!r}, {retryable!r}, "
                f"{str(row.get('description', ''))!r}),"
            )
        lines.append(")")
        lines.append("ERROR_CODES: Final[Mapping[str, int]] = MappingProxyType({")
        lines.extend(f"{str(row['kind'])!r}: {int(row['code'])}," for row in prepared.errors)
        lines.append("})")
    return "\n".join(lines) + "\n"
