"""Identifier minting: UUIDv7 for sessions and MSP command ids.

MSP hosts reject a ``commandId`` that is not a UUIDv7, and session ids minted by the adapter
become the host's session ids, so both come from here. UUIDv7 puts a millisecond timestamp in
the high bits, so ids sort by creation time; a per-process counter keeps ids minted within the
same millisecond ordered too.
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Final

_UUID7: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_uuid7() -> str:
    """A fresh, time-ordered UUIDv7 in canonical lowercase form."""
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            _counter += 1
            if _counter >= 1 << 12:
                _last_ms += 1
                _counter = 0
            now_ms = _last_ms
        else:
            _counter = 0
        _last_ms = now_ms
        counter = _counter
    random_tail = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (now_ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= random_tail
    return canonical(value)


def canonical(value: int) -> str:
    """The canonical lowercase text of the 128-bit UUID ``value`` (as ``str(uuid.UUID(int=))``
    writes it, without building the object: a prompt's ``turn/start`` mints one)."""
    digits = "%032x" % value  # noqa: UP031  # the fastest spelling, on a prompt's way to Muse
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def is_uuid7(text: str) -> bool:
    """True for a canonical lowercase UUIDv7."""
    return bool(_UUID7.match(text))
