"""Type aliases for JSON values.

Contract: ``JsonValue`` describes decoded JSON exactly (objects are ``dict`` with ``str`` keys,
arrays are ``list``), as ``json.loads`` produces it; ``JsonInput`` is its read-only, covariant
counterpart for values to send. They carry no behaviour, and they are real recursive type
aliases at runtime too, so pydantic models may use them as field types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from typing_extensions import TypeAliasType

JsonValue = TypeAliasType(
    "JsonValue",
    "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None",
)
"""Any JSON value."""

JsonObject = TypeAliasType("JsonObject", "dict[str, JsonValue]")
"""A JSON object."""

JsonInput = TypeAliasType(
    "JsonInput",
    "bool | int | float | str | Sequence[JsonInput] | Mapping[str, JsonInput] | None",
)
"""Anything that encodes as JSON, accepted wherever the runtime sends a value.

Read-only container types make it covariant, so a ``dict[str, str]`` is accepted where a
``JsonValue`` (whose ``dict`` is invariant) would be refused. At run time the encoder takes
``dict``, ``list`` and ``tuple`` containers.
"""

RequestId: TypeAlias = int | str
"""A JSON-RPC request id. ``null`` is reserved for error responses to unreadable frames."""

__all__ = ["JsonInput", "JsonObject", "JsonValue", "RequestId"]
