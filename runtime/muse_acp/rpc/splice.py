"""One string member of a response, as the peer spelled it, to forward without re-encoding.

Contract: ``result_string_token(frame, result, key)`` takes a response frame that
``decode_frame`` accepted and its decoded ``result`` object, and returns the JSON string token
(quotes included) that is ``result[key]`` in ``frame``, byte for byte as the peer wrote it, or
None when that cannot be proven in a few steps. Proven means the token sits right after a
``"key"`` member name between unescaped quotes, and the frame with the token replaced by ``""``
decodes to ``result`` with ``key`` set to ``""``: only the member the decoder kept can pass, and
it decodes to ``result[key]``. An empty string is never looked for. The search is bounded by
``MAX_NAME_CANDIDATES``, ``MAX_ESCAPED_QUOTES`` and ``MAX_WHITESPACE``, so text dense with quotes
costs a few scans before the caller falls back to encoding the value itself.
"""

from __future__ import annotations

from typing import Final

from pydantic_core import from_json

from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.rpc.transport import encode_message

__all__ = ["MAX_ESCAPED_QUOTES", "MAX_NAME_CANDIDATES", "MAX_WHITESPACE", "result_string_token"]

MAX_NAME_CANDIDATES: Final = 8
"""Occurrences of ``"key"`` looked at (others are values, names in nested objects, ...)."""
MAX_ESCAPED_QUOTES: Final = 256
"""Escaped quotes stepped over inside the token before giving up."""
MAX_WHITESPACE: Final = 16
"""Whitespace looked through around a member's colon."""
_BACKSLASH_WINDOW: Final = 64
"""How far back a run of backslashes before a quote is counted."""
_QUOTE: Final = 0x22
_COLON: Final = 0x3A
_WHITESPACE: Final = frozenset(b" \t\r\n")


def result_string_token(frame: bytes, result: JsonValue, key: str) -> bytes | None:
    """``result[key]``'s JSON string token as ``frame`` spells it, or None (module contract)."""
    if type(result) is not dict:
        return None
    value = result.get(key)
    if type(value) is not str or not value:
        return None
    name = encode_message(key)
    start = 0
    for _ in range(MAX_NAME_CANDIDATES):
        at = frame.find(name, start)
        if at < 0:
            return None
        start = at + 1
        if _escaped(frame, at) is not False:
            # Inside a string, or behind more backslashes than are worth counting.
            continue
        opening = _member_value(frame, at + len(name))
        if opening is None:
            continue
        closing = _closing_quote(frame, opening)
        if closing is None:
            return None
        if _is_the_member(frame, opening, closing, result, key):
            return frame[opening : closing + 1]
    return None


def _escaped(frame: bytes, quote: int) -> bool | None:
    """Whether a backslash escapes the quote at ``quote``; None when the run is too long."""
    window = frame[max(0, quote - _BACKSLASH_WINDOW) : quote]
    run = len(window) - len(window.rstrip(b"\\"))
    if run == _BACKSLASH_WINDOW:
        return None
    return run % 2 == 1


def _member_value(frame: bytes, after_name: int) -> int | None:
    """The opening quote of a string value following a member name, or None (the name was a
    value, or names something other than a string)."""
    position = _skip_whitespace(frame, after_name)
    if position >= len(frame) or frame[position] != _COLON:
        return None
    position = _skip_whitespace(frame, position + 1)
    if position >= len(frame) or frame[position] != _QUOTE:
        return None
    return position


def _skip_whitespace(frame: bytes, position: int) -> int:
    """The first byte at or after ``position`` that is not whitespace; encoders write none or
    a few here, and a longer run ends the look at ``MAX_WHITESPACE`` (not a quote or colon, so
    the name is passed over)."""
    end = min(len(frame), position + MAX_WHITESPACE)
    while position < end and frame[position] in _WHITESPACE:
        position += 1
    return position


def _closing_quote(frame: bytes, opening: int) -> int | None:
    position = opening + 1
    for _ in range(MAX_ESCAPED_QUOTES + 1):
        quote = frame.find(b'"', position)
        if quote < 0:
            return None
        escaped = _escaped(frame, quote)
        if escaped is None:
            return None
        if not escaped:
            return quote
        position = quote + 1
    return None


def _is_the_member(
    frame: bytes, opening: int, closing: int, result: dict[str, JsonValue], key: str
) -> bool:
    rest = b"".join((frame[:opening], b'""', frame[closing + 1 :]))
    try:
        decoded = from_json(rest, allow_inf_nan=False)
    except ValueError:
        return False
    return type(decoded) is dict and decoded.get("result") == {**result, key: ""}
