"""Decoding one incoming frame into a JSON value, within limits, without ever failing.

Contract: ``decode_frame(frame)`` returns the frame's JSON value, or a ``RefusedFrame`` saying
how to answer it; it never raises. PARSE_ERROR for anything but strict UTF-8 JSON (no byte order
mark, no ``NaN``/``Infinity``); INVALID_REQUEST for JSON this runtime will not process: nesting
deeper than ``MAX_NESTING_DEPTH``, an integer longer than ``MAX_INTEGER_DIGITS`` digits, or an
unpaired UTF-16 surrogate escape. A refused request is answered with its own id whenever the id
can be read (a bounded scan of the top level, also in a frame too deep to parse); a refused
notification or response is not answered. ``decode_plainly`` is the short way for small, plain
frames (``transport.FrameLane``) and returns None for every other. A fast parse comes first;
anything it refuses is decoded again strictly, so a refusal always says what the strict decoder
says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from pydantic_core import from_json

from muse_acp.rpc.errors import RpcError
from muse_acp.rpc.jsonvalue import JsonValue, RequestId

__all__ = [
    "MAX_INTEGER_DIGITS",
    "MAX_NESTING_DEPTH",
    "RefusedFrame",
    "decode_frame",
    "decode_plainly",
]

MAX_NESTING_DEPTH: Final = 128
"""Deepest container nesting accepted; real messages stay below ten."""
MAX_INTEGER_DIGITS: Final = 1000
"""Longest integer accepted; converting longer ones costs quadratic time."""
MAX_SCAN_STEPS: Final = 1_000_000
"""Bound on the work of the scan that looks for the id of a frame too deep to parse."""

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_SPECIAL: Final = re.compile(r'["\[\]{}]')
_BRACKETS: Final = re.compile(r"[\[{]+|[\]}]+")
_STRING_PATTERN: Final = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING: Final = re.compile(_STRING_PATTERN, re.DOTALL)
_SCALAR: Final = re.compile(
    _STRING_PATTERN + r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null",
    re.DOTALL,
)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_DIGITS_ONLY: Final = bytes(0x30 if byte in b"0123456789" else 0x20 for byte in range(256))
"""Turns every ASCII digit of a frame into ``0`` and every other byte into a space
(``bytes.translate``)."""
_TOO_MANY_DIGITS: Final = b"0" * (MAX_INTEGER_DIGITS + 1)
"""A run of digits longer than the limit, as ``_DIGITS_ONLY`` shows any such run: a search for
it is a plain substring search, far cheaper than a regular expression counting digits."""


@dataclass(frozen=True, slots=True)
class RefusedFrame:
    """A frame that is not processed: answer ``error`` to ``request_id`` when ``answer``."""

    error: RpcError
    request_id: RequestId | None = None
    answer: bool = True


class _LimitExceeded(ValueError):
    pass


class _Unterminated(ValueError):
    pass


class _ScanBudgetSpent(ValueError):
    pass


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _LimitExceeded(f"an integer longer than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_int=_bounded_int, parse_constant=_no_constant)
_PLAIN_CHECK_BYTES: Final = 4096
_SHALLOW_BYTES: Final = 2 * (MAX_NESTING_DEPTH + 1)
"""Bytes a frame needs to nest deeper than the limit: a bracket to open and one to close each
level."""
_NOT_OPENERS: Final = bytes(byte for byte in range(256) if byte not in b"{[")
"""Every byte but the brackets that open a container (``bytes.translate`` deletes these)."""
_TOO_LONG_INTEGER: Final = 10**MAX_INTEGER_DIGITS
"""The smallest integer with more than ``MAX_INTEGER_DIGITS`` digits."""
_TOO_LONG_NEGATIVE: Final = -_TOO_LONG_INTEGER
"""Its negative, made once: negating a thousand-digit integer makes a new one each time."""
_TOO_DEEP: Final = f"frame nests deeper than {MAX_NESTING_DEPTH} levels"
_UNPAIRED: Final = (
    "frame holds a string with an unpaired UTF-16 surrogate, which UTF-8 cannot carry"
)


def decode_frame(frame: bytes) -> JsonValue | RefusedFrame:
    """The JSON value of ``frame``, or how to refuse it (see the module contract)."""
    try:
        parsed: JsonValue = from_json(frame, allow_inf_nan=False)
    except ValueError:
        pass  # refused below, for the strict decoder's reason
    else:
        # pydantic-core refuses unpaired surrogates (escaped or not) and integers of more than
        # 4300 digits on its own; what else the limits forbid is ruled out from the bytes and a
        # walk of the containers alone, and the strict decoder says why.
        if _plainly_shallow_and_short(frame) or _parsed_within_limits(parsed):
            return parsed
    return _decode_strictly(frame)


def _parsed_within_limits(value: JsonValue) -> bool:
    """True when ``value``, what pydantic-core parsed of a frame, holds no integer longer
    than the limit and nests no deeper than the limit. One pass over the containers, a level at
    a time, looks at each value once: its cost follows the values, not the bytes, so a page of
    stored output (a few members, one of them a MiB of text) costs next to nothing, where a
    scan of the bytes for runs of digits would read every byte of the text."""
    level: list[JsonValue] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_NESTING_DEPTH:
            return False
        inner: list[JsonValue] = []
        keep = inner.append
        for container in level:
            members: Iterable[JsonValue]
            if isinstance(container, dict):
                members = container.values()
            elif isinstance(container, list):
                members = container
            else:  # only the top value can be a scalar
                continue
            for member in members:
                # Strings, most values, are passed after one look at their type.
                kind = type(member)
                if kind is str:
                    continue
                if kind is dict or kind is list:
                    keep(member)
                elif type(member) is int and not _TOO_LONG_NEGATIVE < member < _TOO_LONG_INTEGER:
                    return False
        level = inner
    return True


def decode_plainly(frame: bytes) -> JsonValue | None:
    """The value ``decode_frame`` gives ``frame`` when it takes no walk and no second decoder
    to find it; None for any other frame (see the module contract)."""
    if not _plainly_shallow_and_short(frame):
        return None
    try:
        value: JsonValue = from_json(frame, allow_inf_nan=False)
    except ValueError:
        return None
    return value


def _decode_strictly(frame: bytes) -> JsonValue | RefusedFrame:
    """``decode_frame`` with the standard library's decoder, whatever the frame."""
    try:
        text = frame.decode("utf-8")
    except UnicodeDecodeError:
        return RefusedFrame(RpcError.parse_error("frame is not valid UTF-8"))
    try:
        value: JsonValue = _DECODER.decode(text)
    except _LimitExceeded as exceeded:
        return _refuse_unparsed(text, f"frame holds {exceeded}")
    except RecursionError:
        return _refuse_unparsed(text, _TOO_DEEP)
    except ValueError:
        return RefusedFrame(RpcError.parse_error())
    if _plainly_within_limits(frame):
        return value
    problem = _problem(value)
    if problem is None:
        return value
    return _refuse(value if isinstance(value, dict) else None, problem)


def _plainly_within_limits(frame: bytes) -> bool:
    """True when no walk of the value of ``frame`` (should it parse) can find a problem, which
    holds for nearly every small frame: an unpaired surrogate can only come from a ``\\u``
    escape (strict UTF-8 decoding refuses encoded ones), and ``_plainly_shallow_and_short``
    rules out the rest."""
    return b"\\u" not in frame and _plainly_shallow_and_short(frame)


def _plainly_shallow_and_short(frame: bytes) -> bool:
    """True when the value of ``frame``, a frame that decoded, can neither nest too deep nor
    hold a too long integer: it is small, and it has no more brackets that open than the depth
    limit (a frame of fewer than ``_SHALLOW_BYTES`` cannot, each level taking two bytes), and no
    long enough run of digits. Brackets inside strings count too, which can only send a frame
    to the walk. Larger frames are left to the walk, whose cost follows their values, not
    bytes."""
    size = len(frame)
    return (
        size <= _PLAIN_CHECK_BYTES
        and (size < _SHALLOW_BYTES or len(frame.translate(None, _NOT_OPENERS)) <= MAX_NESTING_DEPTH)
        # A frame no longer than the limit cannot hold a longer run of digits.
        and (size <= MAX_INTEGER_DIGITS or _TOO_MANY_DIGITS not in frame.translate(_DIGITS_ONLY))
    )


def _problem(value: JsonValue) -> str | None:
    """Why a decoded value exceeds the limits, found without recursion, or None."""
    pending: list[tuple[JsonValue, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                return _UNPAIRED
            continue
        if type(item) is int:
            if _TOO_LONG_NEGATIVE < item < _TOO_LONG_INTEGER:
                continue
            return f"an integer longer than {MAX_INTEGER_DIGITS} digits"
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_NESTING_DEPTH:
            return _TOO_DEEP
        if isinstance(item, dict):
            for key, child in item.items():
                if not key.isascii() and _SURROGATE.search(key):
                    return _UNPAIRED
                pending.append((child, depth + 1))
        else:
            pending.extend((child, depth + 1) for child in item)
    return None


def _usable_id(value: object) -> RequestId | None:
    if type(value) is int:
        return value
    if type(value) is str and not _SURROGATE.search(value):
        return value
    return None


def _refuse(members: dict[str, JsonValue] | None, problem: str) -> RefusedFrame:
    """Refuse a frame whose top level is ``members`` (None: not an object, or unreadable)."""
    error = RpcError.invalid_request(problem)
    if members is None:
        return RefusedFrame(error)
    if "method" in members and "id" not in members:
        return RefusedFrame(error, answer=False)
    if "method" not in members and "id" in members and ("result" in members or "error" in members):
        return RefusedFrame(error, answer=False)
    return RefusedFrame(error, _usable_id(members.get("id")))


def _refuse_unparsed(text: str, problem: str) -> RefusedFrame:
    """Refuse a frame too big for a full parse, reading its top-level members if it has any."""
    try:
        members = _top_level_members(text)
    except _Unterminated:
        return RefusedFrame(RpcError.parse_error())
    except ValueError:
        members = None
    return _refuse(members, problem)


def _skip_container(text: str, pos: int) -> int:
    """The end of the array or object starting at ``pos``, skipped without recursion.

    Only brackets and strings are looked at: the frame failed a full parse for its size, not
    its syntax, so what is skipped is not validated.
    """
    depth = 0
    for _ in range(MAX_SCAN_STEPS):
        special = _SPECIAL.search(text, pos)
        if special is None:
            raise _Unterminated("the frame ends inside a container")
        if special.group() == '"':
            string = _STRING.match(text, special.start())
            if string is None:
                raise _Unterminated("the frame ends inside a string")
            pos = string.end()
            continue
        run = _BRACKETS.match(text, special.start())
        assert run is not None  # _SPECIAL found a bracket there
        brackets = run.group()
        depth += len(brackets) if brackets[0] in "[{" else -len(brackets)
        if depth <= 0:
            # A run of closers may also close enclosing containers: stop after this one's.
            return run.end() + depth
        pos = run.end()
    raise _ScanBudgetSpent("the frame is too large to scan")


def _skip_blank(text: str, pos: int) -> int:
    blank = _WHITESPACE.match(text, pos)
    return pos if blank is None else blank.end()


def _top_level_members(text: str) -> dict[str, JsonValue]:
    """The top-level object's members, nested ones replaced by None.

    Raises:
        _Unterminated: the text ends inside a container or string (a syntax error).
        ValueError: the top level is not an object, or cannot be scanned.
    """
    pos = _skip_blank(text, 0)
    if not text.startswith("{", pos):
        if text.startswith(("[", "{"), pos):
            _skip_container(text, pos)
        raise ValueError("the top level is not an object")
    members: dict[str, JsonValue] = {}
    pos = _skip_blank(text, pos + 1)
    if text.startswith("}", pos):
        return members
    while True:
        name = _STRING.match(text, pos)
        if name is None:
            raise ValueError("expected a member name")
        key = _DECODER.decode(name.group())
        if not isinstance(key, str):
            raise ValueError("expected a member name")
        pos = name.end()
        pos = _skip_blank(text, pos)
        if not text.startswith(":", pos):
            raise ValueError("expected ':'")
        pos = _skip_blank(text, pos + 1)
        if text.startswith(("[", "{"), pos):
            members[key] = None
            try:
                pos = _skip_container(text, pos)
            except _ScanBudgetSpent:
                # The members read so far (often the id) still count; the rest is unread.
                return members
        else:
            scalar = _SCALAR.match(text, pos)
            if scalar is None:
                raise ValueError("expected a value")
            try:
                members[key] = _DECODER.decode(scalar.group())
            except ValueError:
                members[key] = None  # an unreadable scalar (a huge integer) is no usable id
            pos = scalar.end()
        pos = _skip_blank(text, pos)
        if text.startswith("}", pos):
            return members
        if not text.startswith(",", pos):
            raise ValueError("expected ',' or '}'")
        pos = _skip_blank(text, pos + 1)
