"""The C heap of the serving processes: large buffers are reused, not mapped afresh each time.

Contract: ``keep_large_buffers()`` is called once by ``muse-acp serve`` and by ``muse-sim
serve``, never by a library (a program that imports the client library or the simulator keeps
its own allocator settings). Where the C allocator is glibc's malloc, it sets with ``mallopt``
that allocations under ``MMAP_THRESHOLD`` bytes come from the heap and that up to
``TRIM_THRESHOLD`` free bytes stay with the process; anywhere else it does nothing. It returns
whether both were set. The cost is up to ``TRIM_THRESHOLD`` more resident memory after a burst
of large frames; docs/performance.md says what it saves.
"""

from __future__ import annotations

import os
import sys
from typing import Final

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_large_buffers"]

MMAP_THRESHOLD: Final = 4 * 1024 * 1024
"""Allocations below this come from the heap: room for a 1 MiB page in every form it takes."""
TRIM_THRESHOLD: Final = 16 * 1024 * 1024
"""Free memory at the top of the heap kept for reuse: a few pages' worth of buffers."""

# mallopt's parameter numbers, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3


def _is_glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):  # not a name this C library knows
        return False
    return bool(version) and str(version).startswith("glibc")


def keep_large_buffers() -> bool:
    """Tune glibc's malloc for reuse of large buffers (see the module contract)."""
    if not _is_glibc():
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # Both or neither matter: setting either one turns off glibc's own adjustment of both.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
