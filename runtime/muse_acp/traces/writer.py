"""The trace writer process: redacts and writes what a ``recorder.Tracer`` hands it.

Contract: ``python -m muse_acp.traces.writer FOLDER MODE MAX_BYTES START_NS HOME`` reads lines
on stdin until it ends, each ``KIND NS SOURCE DIR PAYLOAD`` (``encode`` writes them): ``F`` a
frame (``PAYLOAD`` the frame's JSON text), ``D`` a decision or ``log`` line (``SOURCE`` its
name, ``PAYLOAD`` its JSON value), ``X`` frames dropped before the next (``NS`` their count),
``S`` secrets learned since it started (``PAYLOAD`` a JSON list: the editor's MCP secrets). It
writes whatever has arrived at once to one ``sink.TraceSink`` under ``FOLDER``, closes it at the
end of input and exits 0 (1 when the trace could not be written; nothing is printed). Running
in a process of its own, its work never takes the relay's interpreter from it.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, cast

from muse_acp.redact import SecretRegistry
from muse_acp.rpc import JsonValue
from muse_acp.traces.redaction import Redactor
from muse_acp.traces.sink import Entry, TraceSink

__all__ = ["encode", "main"]

_READ: Final = 1 << 20


def encode(ns: int, source: str, direction: str, payload: bytes | JsonValue) -> bytes:
    """One input line: a frame when ``source`` is a connection, a decision when ``decision``."""
    if source == "decision":
        value = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        return b"D %d %s - %s\n" % (ns, direction.encode(), value)
    assert isinstance(payload, bytes)
    return b"F %d %s %s %s\n" % (ns, source.encode(), direction.encode(), payload)


def _read(lines: list[bytes], registry: SecretRegistry) -> tuple[list[Entry], int]:
    entries: list[Entry] = []
    dropped = 0
    for line in lines:
        parts = line.split(b" ", 4)
        if len(parts) != 5:
            continue
        kind, ns, source, direction, payload = parts
        if kind == b"F":
            entries.append((int(ns), source.decode(), direction.decode(), payload))
        elif kind == b"D":
            entries.append((int(ns), "decision", source.decode(), json.loads(payload)))
        elif kind == b"X":
            dropped += int(ns)
        elif kind == b"S":
            registry.remember(str(value) for value in json.loads(payload))
    return entries, dropped


def main(argv: Sequence[str]) -> int:
    folder, mode, max_bytes, start_ns, home = argv
    registry = SecretRegistry()
    redactor = Redactor(
        "full" if mode == "full" else "redacted", os.environ, home=home, registry=registry
    )
    sink = TraceSink(Path(folder), redactor, max_bytes=int(max_bytes), start_ns=int(start_ns))
    stdin = cast(io.BufferedReader, sys.stdin.buffer)
    rest = b""
    try:
        while True:
            chunk = stdin.read1(_READ)
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            entries, dropped = _read(lines, registry)
            if entries or dropped:
                sink.write(entries, dropped)
            if not chunk:
                break
        sink.close()
    except OSError:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
