"""The tracer of one ACP connection: frames taken on the hot path, written by a process of its own.

Contract: ``acp`` and the observers ``host`` returns are ``rpc.FrameObserver``s: they only
append the frame, its source and a monotonic time to a queue of at most ``max_queue`` entries
(a frame arriving when it is full is counted as dropped, never waited for) and wake ``run``.
``decision`` records a choice of muse-acp (the backend, what a host offers) the same way, as
are muse-acp's log records (``log``) while ``run`` runs. ``run`` is the writer task: it starts
the writer process (``writer``: redaction and file access happen there, never in the relay's
interpreter) and hands it the queue in batches through its stdin, with the editor's MCP
secrets as they become known; when cancelled it hands over what is left, ends the process's
input and waits for it to finish the file, within ``CLOSE_TIMEOUT`` seconds, killing it
after. A trace that cannot be written is logged once and the session goes on untraced.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final, Literal

import anyio
from anyio.abc import Process

from muse_acp.config import AdapterConfig, TraceSetting
from muse_acp.host.features import HostFeatures
from muse_acp.redact import SESSION_SECRETS, RedactingFilter
from muse_acp.rpc import FrameObserver, JsonValue
from muse_acp.traces.sink import Entry
from muse_acp.traces.writer import encode

__all__ = ["CLOSE_TIMEOUT", "MAX_BYTES", "MAX_QUEUE", "Tracer", "host_observer", "tracer_for"]

logger: Final = logging.getLogger("muse_acp.traces")

MAX_BYTES: Final = 64 * 1024 * 1024
"""Size limit of one trace file."""
MAX_QUEUE: Final = 20_000
"""Entries waiting for the writer; beyond, frames are dropped and the trace says how many."""
CLOSE_TIMEOUT: Final = 5.0
"""Seconds the writer may spend writing what is left when the connection ends."""


class Tracer:
    """Records one ACP connection and its hosts (see the module contract)."""

    def __init__(
        self,
        folder: Path,
        mode: TraceSetting,
        environ: Mapping[str, str],
        *,
        max_bytes: int = MAX_BYTES,
        max_queue: int = MAX_QUEUE,
        home: str | None = None,
    ) -> None:
        self.folder = folder
        self._argv = [
            sys.executable,
            "-m",
            "muse_acp.traces.writer",
            str(folder),
            mode,
            str(max_bytes),
            str(time.monotonic_ns()),
            home if home is not None else str(Path.home()),
        ]
        self._environ = {**os.environ, **environ}
        self._secrets = 0
        self._failed = False
        self._queue: deque[Entry] = deque()
        self._max_queue = max_queue
        self._dropped = 0
        self._hosts = 0
        self._waiting = False
        self._wake = anyio.Event()

    def acp(self, direction: Literal["in", "out"], frame: bytes) -> None:
        """The ACP connection's frame observer."""
        self._put("acp", direction, frame)

    def host(self, argv: list[str], cwd: str) -> FrameObserver:
        """A frame observer for the next host started (``msp1``, ``msp2``...), recording how
        it was started first."""
        self._hosts += 1
        source = f"msp{self._hosts}"
        self.decision("host", {"on": source, "argv": list(argv), "cwd": cwd})
        return partial(self._put, source)

    def log_handler(self) -> logging.Handler:
        """A handler putting muse-acp's log records in the trace (``log`` lines), redacted as
        its logs are; for the event loop's thread only (it wakes the writer)."""
        handler = _TraceLog(self)
        handler.addFilter(RedactingFilter())
        return handler

    def features(self, features: HostFeatures) -> None:
        """Record what a host just started offers, and the bundle it is read with."""
        self.decision(
            "features",
            {
                "version": features.version,
                "bundle": features.bundle,
                "offered": [str(f) for f in sorted(features.offered)],
                "withdrawn": [str(f) for f in sorted(features.withdrawn)],
            },
        )

    def decision(self, name: str, value: JsonValue) -> None:
        """Record a choice of muse-acp worth knowing when reading the trace."""
        self._put("decision", name, value)

    def _put(self, source: str, direction: str, payload: bytes | JsonValue) -> None:
        queue = self._queue
        if len(queue) >= self._max_queue:
            self._dropped += 1
            return
        queue.append((time.monotonic_ns(), source, direction, payload))
        if self._waiting:
            self._waiting = False
            self._wake.set()

    async def run(self) -> None:
        """Hand queued entries to the writer process until cancelled, then what is left (see
        the module contract); muse-acp's log records go in the trace meanwhile."""
        handler = self.log_handler()
        muse_logger = logging.getLogger("muse_acp")
        muse_logger.addHandler(handler)
        process: Process | None = None
        try:
            process = await anyio.open_process(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self._environ,
            )
            while True:
                if not self._queue and not self._dropped:
                    self._wake = anyio.Event()
                    self._waiting = True
                    await self._wake.wait()
                await self._hand(process)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            self._fail(error)
        finally:
            muse_logger.removeHandler(handler)
            if process is not None:
                with anyio.CancelScope(shield=True):
                    await self._finish(process)

    async def _hand(self, process: Process) -> None:
        assert process.stdin is not None
        batch = list(self._queue)
        self._queue.clear()
        parts = [encode(*entry) for entry in batch]
        if self._dropped:
            parts.insert(0, b"X %d - - -\n" % self._dropped)
            self._dropped = 0
        secrets = SESSION_SECRETS.values()
        if len(secrets) != self._secrets:  # the editor's MCP secrets, as they become known
            self._secrets = len(secrets)
            parts.insert(0, b"S 0 - - " + json.dumps(list(secrets)).encode() + b"\n")
        if parts and not self._failed:
            await process.stdin.send(b"".join(parts))

    async def _finish(self, process: Process) -> None:
        with anyio.move_on_after(CLOSE_TIMEOUT):
            try:
                await self._hand(process)
                assert process.stdin is not None
                await process.stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                self._fail(error)
            if await process.wait() != 0:
                self._fail(OSError(f"the writer exited with status {process.returncode}"))
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(CLOSE_TIMEOUT):
                await process.wait()
        await process.aclose()

    def _fail(self, error: BaseException) -> None:
        if not self._failed:
            logger.warning("the trace stops: %s cannot be written (%s)", self.folder, error)
        self._failed = True


class _TraceLog(logging.Handler):
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self._tracer = tracer
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if threading.get_ident() == self._thread:  # the writer's wake-up is the loop's alone
            line = f"{record.levelname} {record.name}: {record.getMessage()}"
            self._tracer.decision("log", line)


def host_observer(tracer: Tracer | None, argv: list[str], cwd: str) -> FrameObserver | None:
    """The frame observer of a host started with ``argv`` in ``cwd`` (None: no tracer)."""
    return None if tracer is None else tracer.host(argv, cwd)


def tracer_for(config: AdapterConfig, environ: Mapping[str, str]) -> Tracer | None:
    """The tracer ``config`` asks for, or None when tracing is off."""
    if config.trace == "off":
        return None
    return Tracer(config.traces, config.trace, environ)
