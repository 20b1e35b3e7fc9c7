"""Hypothesis strategies for hostile client frames: garbage, near-misses and valid-looking ones.

Contract: ``frames()`` draws one frame's bytes (no LF inside; a trailing CR is allowed). Frames are
built from message-shaped objects (right and wrong ``jsonrpc``, ids of every JSON type, known,
unknown and extension methods, params of every type, responses, batches) serialized with raw
number tokens the standard encoder would never write (``1e999``, ``-1e999``, a 401-digit
integer), then sometimes mutated byte-wise: cut short, NUL or invalid UTF-8 spliced in, a byte
replaced, an unpaired surrogate escape added. What each frame must be answered is decided by the
oracle from its bytes alone, never by how it was drawn. ``wire_bytes(frames)`` joins frames with
LF or CR LF and blank lines, and ``chunks(data)`` splits bytes at drawn points, so a frame may
arrive across several reads; ``bursts()`` draws all three at once, since a test running in the
event loop must not draw (hypothesis aborts a draw with an exception the loop cannot carry).

Methods are drawn from the ACP methods the agent serves except ``logout`` (valid with any
params, it would close the sessions other examples rely on), plus unknown and extension names.
Request ids are ints or strings that never start with the driver's own prefix.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from hypothesis import strategies as st

from .oracle import CANCEL_REQUEST, REQUEST_OUTCOMES

__all__ = [
    "Burst",
    "bursts",
    "chunks",
    "frames",
    "json_values",
    "messages",
    "mostly",
    "wire_bytes",
]


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Raw:
    """A JSON token written as is: how frames get numbers ``json.dumps`` cannot produce."""

    text: str


HUGE_INTEGER: Final = Raw("1" + "0" * 400)
RAW_NUMBERS: Final = (
    Raw("1e999"),
    Raw("-1e999"),
    HUGE_INTEGER,
    Raw("-" + "9" * 300),
    Raw("1E+2"),
    Raw("-0"),
    Raw("0.0000000000000000000001"),
)

FUZZED_METHODS: Final = tuple(sorted(set(REQUEST_OUTCOMES) - {"logout"}))
UNKNOWN_METHODS: Final = (
    "",
    "session/unknown",
    "Session/New",
    "session/new ",
    "_",
    "_muse/unknown",
    "_session/other",
    "_vendor.example/feature",
    "$/other",
    "rpc.discover",
    "x" * 300,
)
NOTIFICATION_METHODS: Final = ("session/cancel", CANCEL_REQUEST, "_muse/notice", "unknown/notice")

_SCALARS: Final = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(RAW_NUMBERS)
)


def mostly(
    common: st.SearchStrategy[_T], rare: st.SearchStrategy[_T], odds: int = 4
) -> st.SearchStrategy[_T]:
    """``common`` ``odds`` times out of ``odds + 1``, else ``rare`` (``one_of`` cannot weight)."""
    return st.integers(min_value=0, max_value=odds).flatmap(lambda n: common if n else rare)


def json_values(max_leaves: int = 10) -> st.SearchStrategy[object]:
    """Any JSON value, shallow, with raw number tokens among the scalars."""
    return st.recursive(
        _SCALARS,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def dumps(value: object) -> str:
    """Compact JSON text of ``value``; ``Raw`` tokens are written verbatim."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        members = ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in value.items())
        return "{" + members + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    return json.dumps(value)


_ID_TEXT: Final = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\n"), max_size=10
).filter(lambda text: not text.startswith("driver-"))

request_ids: Final = (
    st.integers(min_value=-(2**63), max_value=2**63) | _ID_TEXT | st.just(HUGE_INTEGER)
)
bad_ids: Final = (
    st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from((Raw("1e999"), Raw("-1e999"), Raw("1.0"), None))
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)

SHAPES: Final = ("response", "batch", "value")
"""Message shapes other than requests and notifications."""

_MISSING: Final = object()
"""Marks a member left out of a message."""


LONG_TEXT: Final = "x" * 10_000
"""A member far longer than any real one: errors must not quote it whole."""

_CWDS: Final = ("relative/dir", "/no/such/muse-acp/dir", "", LONG_TEXT, "/" + LONG_TEXT)


def _or_long(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return strategy | st.just(LONG_TEXT)


def _params(method: str) -> st.SearchStrategy[object]:
    shaped = st.fixed_dictionaries(
        {},
        optional={
            "sessionId": _or_long(st.text(max_size=12) | st.just("0" * 20)) | st.integers(),
            "cwd": st.sampled_from(_CWDS) | st.integers(),
            "mcpServers": st.lists(json_values(3), max_size=2),
            "prompt": st.lists(json_values(4), max_size=2) | st.text(max_size=5),
            "modeId": _or_long(st.text(max_size=8)),
            "methodId": _or_long(st.text(max_size=12)),
            "_meta": json_values(4),
        },
    )
    return st.one_of(st.just(_MISSING), json_values(6), shaped)


@st.composite
def messages(draw: st.DrawFn) -> object:
    """A message-shaped value, mostly an object, sometimes a batch or a bare value."""
    # Weighted towards requests: they are what must be answered, exactly once.
    shape = draw(st.sampled_from(("request",) * 4 + ("notification",) * 2 + SHAPES))
    if shape == "value":
        return draw(json_values(6))
    if shape == "batch":
        return draw(st.lists(messages(), max_size=3))
    message: dict[str, object] = {}
    version = draw(st.sampled_from(("2.0",) * 7 + ("1.0", 2, _MISSING)))
    if version is not _MISSING:
        message["jsonrpc"] = version
    if shape == "response":
        message["id"] = draw(request_ids | bad_ids)
        message[draw(st.sampled_from(("result", "error")))] = draw(json_values(4))
        return message
    if shape == "request":
        message["id"] = draw(mostly(request_ids, bad_ids))
    named = st.sampled_from(FUZZED_METHODS + UNKNOWN_METHODS + NOTIFICATION_METHODS)
    method = draw(mostly(named, st.text(max_size=10) | json_values(2)))
    message["method"] = method
    if method == CANCEL_REQUEST and draw(st.booleans()):
        message["params"] = {"requestId": draw(request_ids)}
        return message
    params = draw(_params(method if isinstance(method, str) else ""))
    if params is not _MISSING:
        message["params"] = params
    return message


def _mutate(data: bytes, draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(("cut", "nul", "bad-utf8", "byte", "surrogate", "bom")))
    at = draw(st.integers(min_value=0, max_value=len(data)))
    match kind:
        case "cut":
            return data[:at]
        case "nul":
            return data[:at] + b"\x00" + data[at:]
        case "bad-utf8":
            junk = draw(st.sampled_from((b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80")))
            return data[:at] + junk + data[at:]
        case "byte":
            byte = draw(st.integers(min_value=0, max_value=255).filter(lambda b: b != 0x0A))
            return data[:at] + bytes([byte]) + data[at + 1 :]
        case "surrogate":
            quote = data.find(b'"', at)
            if quote < 0:
                return data
            return data[: quote + 1] + b"\\udc80" + data[quote + 1 :]
        case _:
            return b"\xef\xbb\xbf" + data


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """One frame's bytes (see the module contract)."""
    data = dumps(draw(messages())).encode("utf-8")
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        data = _mutate(data, draw)
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        data = draw(st.binary(max_size=40).filter(lambda b: b"\n" not in b))
    return data


@st.composite
def wire_bytes(draw: st.DrawFn, lines: Sequence[bytes]) -> bytes:
    """``lines`` as they could reach stdin: LF or CR LF endings, with blank lines between."""
    out = bytearray()
    for line in lines:
        blank = draw(st.sampled_from((b"", b"", b"", b"\n", b"\r\n", b"  \t\n", b"\n\n")))
        out += blank + line + draw(st.sampled_from((b"\n", b"\r\n")))
    return bytes(out)


@st.composite
def chunks(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` split at drawn points into the writes that deliver it."""
    cuts = sorted(
        set(draw(st.lists(st.integers(min_value=1, max_value=max(len(data) - 1, 1)), max_size=6)))
    )
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if a < b]


@dataclass(frozen=True, slots=True)
class Burst:
    """Frames, the bytes that carry them, and the writes those bytes are split into."""

    frames: tuple[bytes, ...]
    wire: bytes
    pieces: tuple[bytes, ...]


@st.composite
def bursts(draw: st.DrawFn, max_frames: int = 6) -> Burst:
    lines = draw(st.lists(frames(), min_size=1, max_size=max_frames))
    wire = draw(wire_bytes(lines))
    return Burst(tuple(lines), wire, tuple(draw(chunks(wire))))
