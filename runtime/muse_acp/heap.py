"""The C heap of the serving processes: large buffers are reused, not mapped afresh each time.

Contract: ``keep_large_buffers()`` is called once by ``muse-acp serve`` and by ``muse-sim
serve``, never by a library (a program that imports the client library or the simulator keeps
its own allocator settings). Where the C allocator is glibc's malloc, it sets two of its
parameters with ``mallopt``: allocations under ``MMAP_THRESHOLD`` bytes come from the heap
instead of a mapping of their own, and up to ``TRIM_THRESHOLD`` bytes free at the top of the
heap stay with the process instead of going back to the kernel at once. Anywhere else it does
nothing. It returns whether both were set.

Why: a stored-output page is a frame of about 1 MiB, and the adapter holds it in a handful of
buffers of about that size (the frame read from Muse, its decoded text, the answer written to
the client; the simulator's file read, text and encoded answer). With glibc's defaults the
buffers one page frees are returned to the kernel and the next page's are mapped again, and
each 4 KiB of a new mapping costs a page fault when it is first touched: about a quarter of
the adapter's CPU per page. What it costs: after a burst of large frames the process keeps up
to ``TRIM_THRESHOLD`` more memory resident, to be reused. Python's small objects (pymalloc's
arenas) are not affected either way.
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
