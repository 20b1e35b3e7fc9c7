"""Reading a file that must be a regular one, without ever waiting on what stands at its path.

Contract: ``read_regular(path, limit)`` returns at most ``limit + 1`` bytes (so the caller can
tell a file too big) or None when there is no file; it opens without blocking and refuses
anything but a regular file (``NotRegularFile``: a FIFO, a device, a directory, a socket). It
blocks on the file system itself: call it off the event loop.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotRegularFile", "read_regular"]


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a directory or a socket: nothing to read settings from."""


def read_regular(path: Path, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of the regular file at ``path``; None when there is none.

    Raises:
        NotRegularFile: the path is not a regular file.
        OSError: the file could not be read.
    """
    try:
        # Non-blocking, so a FIFO planted at the path is refused instead of waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    finally:
        os.close(fd)
