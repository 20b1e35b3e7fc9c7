"""Short, safe descriptions of pydantic validation failures.

Contract: ``describe_validation_error`` turns a ``pydantic.ValidationError`` into one short
phrase of our own, such as ``prompt[0].type is not a supported value`` or ``sessionId is
required``. It names the wire path (aliases, as validated) of the most relevant failure and says
whether the member is missing, unexpected, of the wrong type or otherwise invalid. It never
includes pydantic's message text, input values, documentation URLs or tracebacks, and it bounds
the length of what it returns. Peers control the input, so this text is safe to put on the wire.

Pydantic inserts union bookkeeping into error locations: the tag of a tagged union
(``prompt.0.text.text``) or the class name of a plain union member (``prompt.0.TextBlock.text``).
When the validated input is available, the path is resolved against it to drop those segments;
without it, only segments that cannot be JSON member names of ours are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import MappingProxyType
from typing import Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.text import ELLIPSIS, clip

__all__ = ["UNKNOWN_INPUT", "describe_validation_error"]


class _UnknownInput:
    """Marker for "the validated input is not available"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN_INPUT"


UNKNOWN_INPUT: Final = _UnknownInput()
"""Pass as ``data`` when the input that failed validation is not at hand."""

_PHRASES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "missing": "is required",
        "union_tag_not_found": "is required",
        "extra_forbidden": "is not allowed",
        "literal_error": "is not a supported value",
        "enum": "is not a supported value",
        "union_tag_invalid": "is not a supported value",
        "too_short": "is too short",
        "string_too_short": "is too short",
        "bytes_too_short": "is too short",
        "too_long": "is too long",
        "string_too_long": "is too long",
        "bytes_too_long": "is too long",
    }
)
"""Phrase per pydantic error type; types ending in ``_type`` read "has the wrong type"."""

_TAG_MISMATCH: Final = frozenset({"literal_error", "enum", "union_tag_invalid"})
"""Error types that mean "this union member was not the intended one"."""

_DISCRIMINATED: Final = frozenset({"union_tag_invalid", "union_tag_not_found"})
"""Error types reported at the union itself; the discriminator member is appended."""

_MAX_SEGMENT_CHARS: Final = 64
_MAX_PATH_CHARS: Final = 200
_QUOTED_NAME: Final = re.compile(r"'([A-Za-z_$][A-Za-z0-9_$]*)'")
_CLASS_NAME: Final = re.compile(r"[A-Z][A-Za-z0-9_]*")

Segment = str | int


def describe_validation_error(
    exc: ValidationError, data: JsonValue | _UnknownInput = UNKNOWN_INPUT
) -> str:
    """Describe the most relevant failure in ``exc`` as ``"<path> <phrase>"``.

    ``data`` is the input that failed validation; giving it makes the path exact.
    """
    details = exc.errors(include_url=False, include_input=False, include_context=True)
    if not details:
        return "params are invalid"
    resolved = [(detail, *_resolve(detail["loc"], data)) for detail in details]
    rejected = {
        member
        for detail, _path, member in resolved
        if member is not None and detail["type"] in _TAG_MISMATCH
    }
    # A plain union reports every member's failures; prefer the member whose tag matched.
    preferred = [entry for entry in resolved if entry[2] is None or entry[2] not in rejected]
    detail, path, _member = (preferred or resolved)[0]
    if detail["type"] in _DISCRIMINATED:
        discriminator = _discriminator_name(detail)
        if discriminator is not None:
            path = [*path, discriminator]
    return f"{_format_path(path)} {_phrase(detail['type'])}"


def _phrase(error_type: str) -> str:
    phrase = _PHRASES.get(error_type)
    if phrase is not None:
        return phrase
    if error_type.endswith("_type"):
        return "has the wrong type"
    return "is invalid"


def _discriminator_name(detail: ErrorDetails) -> str | None:
    context = detail.get("ctx")
    if context is None:
        return None
    match = _QUOTED_NAME.fullmatch(str(context.get("discriminator", "")))
    return None if match is None else match.group(1)


def _resolve(
    loc: Sequence[Segment], data: JsonValue | _UnknownInput
) -> tuple[list[Segment], tuple[Segment, ...] | None]:
    """Return the wire path of ``loc`` and the location prefix naming its union member, if any."""
    if isinstance(data, _UnknownInput):
        return _resolve_without_input(loc)
    path: list[Segment] = []
    member: tuple[Segment, ...] | None = None
    value: JsonValue = data
    for index, segment in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(value, dict) and isinstance(segment, str) and segment in value:
            child = value[segment]
            if last or isinstance(child, dict | list):
                path.append(segment)
                value = child
                continue
            following = loc[index + 1]
            if not (isinstance(following, str) and following in value):
                # A scalar member followed by labels of a union of scalar types: stop here.
                path.append(segment)
                break
        elif isinstance(value, list) and isinstance(segment, int) and 0 <= segment < len(value):
            path.append(segment)
            value = value[segment]
            continue
        elif last and isinstance(value, dict):
            path.append(segment)  # a member that is missing or not allowed
            continue
        # Not in the input: a union tag, a member class name or a type label of a union.
        if member is None:
            member = tuple(loc[: index + 1])
    return path, member


def _resolve_without_input(
    loc: Sequence[Segment],
) -> tuple[list[Segment], tuple[Segment, ...] | None]:
    path: list[Segment] = []
    member: tuple[Segment, ...] | None = None
    for index, segment in enumerate(loc):
        if isinstance(segment, str) and ("[" in segment or _CLASS_NAME.fullmatch(segment)):
            if member is None:
                member = tuple(loc[: index + 1])
            continue
        path.append(segment)
    return path, member


def _format_path(path: Sequence[Segment]) -> str:
    if not path:
        return "params"
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
            continue
        text = clip(segment, _MAX_SEGMENT_CHARS)
        parts.append(f".{text}" if parts else text)
    joined = "".join(parts)
    if len(joined) > _MAX_PATH_CHARS:
        joined = ELLIPSIS + joined[-_MAX_PATH_CHARS:]
    return joined
