"""Emit the frozen method tables (and, for MSP, the error registry) of one generated module.

The tables map each wire method to its params and result models, grouped by the side that
handles the message (``AGENT_REQUESTS``, ``CLIENT_NOTIFICATIONS``, ``HOST_REQUESTS``, ...), so
routers are built from typed data instead of method-name strings scattered through the runtime.
"""

from __future__ import annotations

from typing import Any

from codegen.prepass import PreparedSchema, SchemaError


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


def emit(prepared: PreparedSchema, *, constants: dict[str, str]) -> str:
    """Return Python source defining the tables; constants become ``Final[str]`` names."""
    lines = [
        "from collections.abc import Mapping",
        "from types import MappingProxyType",
        "from typing import Final",
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
    if prepared.errors:
        lines.append("ERRORS: Final[tuple[ErrorSpec, ...]] = (")
        for row in prepared.errors:
            retryable = row.get("retryable")
            lines.append(
                f"ErrorSpec({int(row['code'])}, {str(row['kind'])!r}, {retryable!r}, "
                f"{str(row.get('description', ''))!r}),"
            )
        lines.append(")")
    return "\n".join(lines) + "\n"
