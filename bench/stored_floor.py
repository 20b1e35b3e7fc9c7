"""The least any Python relay of stored output could do, as three processes in a pipeline.

Contract: ``python -m bench.stored_floor host PATH SIZE PAGE | ... forward | ... client`` moves
``SIZE`` bytes of the file at ``PATH`` from a host to a client the way ``_muse/readOutput`` must,
minus everything a real adapter does beyond the JSON and the pipes: the host reads each page of
``PAGE`` bytes, decodes it as UTF-8 and encodes it as one JSON-RPC result frame (pydantic-core,
as ``muse-sim`` does); the process in the middle forwards the bytes unread (no decoding, no
checks, no requests, blocking reads and writes of up to a MiB, no event loop); the client splits
the lines, decodes each frame (pydantic-core) and counts its text's bytes. The client prints the
bytes it counted and the seconds from its first byte to its last, so no interpreter's start is
counted. ``stored_output`` times this beside the real read: whatever a conforming adapter adds
(decoding the page to check it, the checks with the host, requests, an event loop) can only be
slower.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Final

from pydantic_core import from_json, to_json

from bench.blocking import write_all

__all__ = ["client", "forward", "host"]

READ_BYTES: Final = 1 << 20


def host(path: str, size: int, page: int) -> None:
    """Write the file's first ``size`` bytes as result frames of ``page`` bytes of text."""
    with open(path, "rb") as source:
        for request_id in range(-(-size // page)):
            text = source.read(min(page, size - request_id * page)).decode()
            head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":' % request_id
            write_all(1, b"".join((head, to_json(text), b',"encoding":"utf8"}}\n')))


def forward() -> None:
    """Copy standard input to standard output as it comes."""
    while data := os.read(0, READ_BYTES):
        write_all(1, data)


def client() -> None:
    """Decode every frame on standard input; print the text's bytes and the seconds it took."""
    pending: list[bytes] = []
    received = 0
    started: float | None = None
    while data := os.read(0, READ_BYTES):
        if started is None:
            started = time.perf_counter()
        while (end := data.find(b"\n")) >= 0:
            line = b"".join((*pending, data[:end]))
            pending, data = [], data[end + 1 :]
            received += len(from_json(line)["result"]["content"].encode())
        if data:
            pending.append(data)
    elapsed = time.perf_counter() - started if started is not None else 0.0
    print(received, elapsed)


def main(argv: list[str]) -> None:
    role, *args = argv
    if role == "host":
        path, size, page = args
        host(path, int(size), int(page))
    elif role == "forward":
        forward()
    elif role == "client":
        client()
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
