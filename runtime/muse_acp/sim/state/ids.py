"""Identifiers, timestamps and view cursors as the simulated host mints and reads them.

Contract:

* ``new_uuid7`` mints time-ordered UUIDv7 ids (sessions, items, approvals); ``is_uuid7`` checks
  the form MSP requires of ``commandId`` and client-chosen session ids; ``is_uuid`` accepts any
  UUID form and guards every id that becomes part of a file name.
* ``new_call_id`` mints tool call ids in the hosts' ``call_<32 hex>`` form.
* View cursors are ``v:<sessionId>:<n>`` for the n-th durable event of a session (one counter
  per session, continued by every process that holds it) and ``v:<sessionId>:<n>.<k>`` for the
  k-th live-only event after it; ``parse_cursor`` reads either back to ``n``.
* ``record_id`` names the durable record behind cursor ``n``; it is derived, never stored.
* ``rfc3339_now`` gives microsecond timestamps with trailing zeros trimmed, as hosts print them.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Final

from muse_acp.ids import is_uuid7 as is_canonical_uuid7, new_uuid7

__all__ = [
    "durable_cursor",
    "fragment_cursor",
    "is_uuid",
    "is_uuid7",
    "micros_of",
    "new_call_id",
    "new_uuid7",
    "now_ms",
    "parse_cursor",
    "record_id",
    "rfc3339_now",
]

_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CURSOR: Final = re.compile(r"v:(?P<sid>[0-9a-f-]{36}):(?P<n>[0-9]{1,12})(?:\.[0-9]{1,12})?")
_RECORDS: Final = uuid.UUID("6d9f1e52-3c1a-4f0e-9a57-6d7573652d73")
"""Namespace of the derived record ids (any fixed UUID would do)."""


def is_uuid7(text: str) -> bool:
    """True for a UUIDv7 in any letter case (hosts accept either)."""
    return is_canonical_uuid7(text.lower())


def is_uuid(text: str) -> bool:
    return _UUID.fullmatch(text) is not None


def new_call_id() -> str:
    return "call_" + os.urandom(16).hex()


def record_id(session_id: str, sequence: int) -> str:
    """The id of the durable record at ``sequence`` (deterministic, so readers can derive it)."""
    return str(uuid.uuid5(_RECORDS, f"{session_id}/{sequence}"))


def durable_cursor(session_id: str, n: int) -> str:
    return f"v:{session_id}:{n}"


def fragment_cursor(session_id: str, n: int, k: int) -> str:
    return f"v:{session_id}:{n}.{k}"


def parse_cursor(session_id: str, cursor: str) -> int | None:
    """The durable position ``n`` a cursor of ``session_id`` names, or None if it is not one."""
    match = _CURSOR.fullmatch(cursor)
    if match is None or match.group("sid") != session_id:
        return None
    return int(match.group("n"))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def rfc3339_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` with trailing zeros trimmed."""
    moment = datetime.now(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return f"{text}.{fraction}Z" if fraction else f"{text}Z"


def micros_of(timestamp: str) -> int:
    """Microseconds since the epoch of an RFC 3339 timestamp written by ``rfc3339_now``."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond
