"""Blocking writes for the bench's bare processes (the pipe limits and the least relays).

Contract: ``write_all(fd, data)`` writes every byte of ``data`` to the blocking descriptor
``fd``, however many writes that takes. Nothing else: these processes measure what a pipe
costs, so they load no runtime to write with.
"""

from __future__ import annotations

import os

__all__ = ["write_all"]


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (see the module contract)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
