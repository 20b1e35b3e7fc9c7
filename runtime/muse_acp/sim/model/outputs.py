"""Tool output: the deterministic bytes the fake tools print, how they are stored and read back.

Contract:

* ``pattern_chunks(unit, size)`` yields exactly ``size`` bytes of ``unit`` repeated, in chunks
  of at most ``CHUNK_BYTES``, without ever holding more than one chunk; ``TEXT_UNIT`` is the
  ``output-marker\\n`` line of ``sim:bash`` and ``BINARY_UNIT`` (with 0xFF and 0x80) the bytes
  of ``sim:binary``.
* ``OutputSink`` writes a tool's output to the session's store as it streams and describes it
  when the tool ends (``OutputRef`` for the item and an ``OutputInfo`` file for readers).
* ``read_range`` serves ``item/readOutput``: up to ``MAX_READ_BYTES`` from an offset, as
  ``utf8`` when the returned range is valid UTF-8 and ``base64`` otherwise. For text output, a
  range never ends inside a character (it is shortened to the last whole one), and an offset
  inside a character is refused with -32602 and ``data.alignedNextOffset``.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from muse_acp.sim.state import errors
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.store import OutputInfo, Store
from muse_acp_wire.msp import ErrorData, ItemReadOutputResult, OutputRef

__all__ = [
    "BINARY_UNIT",
    "CHUNK_BYTES",
    "MAX_READ_BYTES",
    "TEXT_MEDIA_TYPE",
    "TEXT_UNIT",
    "VISIBLE_BYTES",
    "OutputSink",
    "pattern_chunks",
    "read_range",
]

TEXT_UNIT: Final = b"output-marker\n"
BINARY_UNIT: Final = b"\xff\x80binary-marker\x00\n"
CHUNK_BYTES: Final = 64 * 1024
"""The largest output delta, and the unit output is generated and stored in."""
VISIBLE_BYTES: Final = 16 * 1024
"""How much of a tool's output its item shows in ``visibleOutput``; the rest is stored only."""
MAX_READ_BYTES: Final = 6 * 1024 * 1024
TEXT_MEDIA_TYPE: Final = "text/plain; charset=utf-8"
BINARY_MEDIA_TYPE: Final = "application/octet-stream"


def pattern_chunks(unit: bytes, size: int, chunk: int = CHUNK_BYTES) -> Iterator[bytes]:
    block = unit * (chunk // len(unit) + 2)
    offset = 0
    while offset < size:
        length = min(chunk, size - offset)
        start = offset % len(unit)
        yield block[start : start + length]
        offset += length


class OutputSink:
    """Stores one tool's output while it streams (see the module contract)."""

    def __init__(self, store: Store, session_id: str, item_id: str, *, media_type: str) -> None:
        self.ref_id = new_uuid7()
        self._store = store
        self._session_id = session_id
        self._item_id = item_id
        self._media_type = media_type
        self._path = store.output_path(session_id, self.ref_id)
        self._fd: int | None = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0

    def write(self, data: bytes) -> None:
        if self._fd is None:
            raise RuntimeError("the output is already finished")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def finish(self, *, available: bool = True) -> OutputRef:
        """Close the output and describe it; a ``missing`` output's bytes are discarded."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        availability = "available" if available else "missing"
        if not available:
            self._path.unlink(missing_ok=True)
        info = OutputInfo(self.ref_id, self._item_id, self._media_type, availability, self.size)
        self._store.write_output_info(self._session_id, info)
        return OutputRef(
            id=self.ref_id,
            uri=f"muse-sim://sessions/{self._session_id}/outputs/{self.ref_id}",
            kind="tool_output",
            byte_len=self.size,
            availability=availability,
            media_type=self._media_type,
        )


def _lead_length(byte: int) -> int:
    if byte < 0x80:
        return 1
    if byte >> 5 == 0b110:
        return 2
    if byte >> 4 == 0b1110:
        return 3
    if byte >> 3 == 0b11110:
        return 4
    return 1


def _whole_characters(data: bytes) -> int:
    """The length of the longest prefix of ``data`` that does not end inside a character."""
    index = len(data) - 1
    while index >= 0 and len(data) - index < 4 and data[index] & 0xC0 == 0x80:
        index -= 1
    if index < 0 or len(data) - index >= _lead_length(data[index]):
        return len(data)
    return index


def _unavailable(item_id: str, ref_id: str, availability: str | None, message: str) -> Exception:
    if availability is None:
        data = ErrorData(
            kind="outputUnavailable", retryable=False, item_id=item_id, output_ref=ref_id
        )
    else:
        data = ErrorData(
            kind="outputUnavailable",
            retryable=False,
            availability=availability,
            item_id=item_id,
            output_ref=ref_id,
        )
    return errors.host_error(message, data)


def read_range(
    store: Store, session_id: str, item_id: str, ref_id: str, offset: int, length: int
) -> ItemReadOutputResult:
    """One chunk of stored output (see the module contract).

    Raises:
        RpcError: -32041 for an unknown or unreadable output, -32602 for a bad offset.
    """
    info = store.read_output_info(session_id, ref_id)
    if info is None or info.item_id != item_id:
        raise _unavailable(item_id, ref_id, None, f"item {item_id} has no stored output {ref_id}")
    path: Path = store.output_path(session_id, ref_id)
    if info.availability != "available" or not path.is_file():
        availability = info.availability if info.availability != "available" else "missing"
        message = f"the stored output of item {item_id} cannot be read ({availability})"
        raise _unavailable(item_id, ref_id, availability, message)
    if offset > info.byte_len:
        raise errors.invalid_params(f"offsetBytes {offset} is past the end of the output")
    text = info.media_type.startswith("text/")
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read(min(length, info.byte_len - offset))
        if text and data and data[0] & 0xC0 == 0x80:
            handle.seek(offset)
            ahead = handle.read(4)
            step = next((i for i, b in enumerate(ahead) if b & 0xC0 != 0x80), len(ahead))
            raise errors.host_error(
                f"offsetBytes {offset} is inside a UTF-8 character",
                ErrorData(kind="invalidParams", retryable=False, aligned_next_offset=offset + step),
            )
    eof = offset + len(data) >= info.byte_len
    if text and not eof:
        whole = _whole_characters(data)
        if whole:
            data = data[:whole]
    try:
        content, encoding = data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode("ascii"), "base64"
    return ItemReadOutputResult(
        content=content,
        encoding=encoding,
        media_type=info.media_type,
        offset_bytes=offset,
        byte_len=len(data),
        eof=offset + len(data) >= info.byte_len,
    )
