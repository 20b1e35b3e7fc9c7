"""The tracer of one ACP connection: frames taken on the hot path, written by a task of its own.

Contract: ``acp`` and the observers ``host`` returns are ``rpc.FrameObserver``s: they only
append the frame, its source and a monotonic time to a queue of at most ``max_queue`` entries
(a frame arriving when it is full, or once the file is capped, is counted as dropped, never
waited for) and wake ``run``. ``decision`` records a choice of muse-acp (the backend, what a
host offers) the same way, as are muse-acp's log records (``log``) while ``run`` runs. ``run``
is the writer task: it takes the queue in batches and hands each to a worker thread (``sink``),
so no file access happens on the event loop, with the GIL handed over more often meanwhile
(``SWITCH_INTERVAL``); when cancelled it writes what is left and closes the file, within
``CLOSE_TIMEOUT`` seconds. A trace that cannot be written is logged once and the session goes
on untraced.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final, Literal

import anyio

from muse_acp.config import AdapterConfig, TraceSetting
from muse_acp.host.features import HostFeatures
from muse_acp.redact import RedactingFilter
from muse_acp.rpc import FrameObserver, JsonValue
from muse_acp.traces.redaction import Redactor
from muse_acp.traces.sink import Entry, TraceSink

__all__ = ["CLOSE_TIMEOUT", "MAX_BYTES", "MAX_QUEUE", "Tracer", "host_observer", "tracer_for"]

logger: Final = logging.getLogger("muse_acp.traces")

MAX_BYTES: Final = 64 * 1024 * 1024
"""Size limit of one trace file."""
MAX_QUEUE: Final = 20_000
"""Entries waiting for the writer; beyond, frames are dropped and the trace says how many."""
SWITCH_INTERVAL: Final = 0.0005
"""Seconds between GIL hand-overs while a trace is written (``_SwitchInterval``)."""
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
        start = time.monotonic_ns()
        self.sink = TraceSink(
            folder, Redactor(mode, environ, home=home), max_bytes=max_bytes, start_ns=start
        )
        self._queue: deque[Entry] = deque()
        self._max_queue = max_queue
        self._dropped = 0
        self._hosts = 0
        self._waiting = False
        self._wake = anyio.Event()

    @property
    def path(self) -> Path | None:
        """The trace file, once its first entry was written."""
        return self.sink.path

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
        if len(queue) >= self._max_queue or self.sink.capped:
            self._dropped += 1
            return
        queue.append((time.monotonic_ns(), source, direction, payload))
        if self._waiting:
            self._waiting = False
            self._wake.set()

    async def run(self) -> None:
        """Write queued entries until cancelled, then what is left (see the module contract);
        muse-acp's log records go in the trace meanwhile."""
        handler = self.log_handler()
        muse_logger = logging.getLogger("muse_acp")
        muse_logger.addHandler(handler)
        switch = _prompt_switches()
        try:
            while True:
                if not self._queue and not self._dropped:
                    self._wake = anyio.Event()
                    self._waiting = True
                    await self._wake.wait()
                await self._write()
        finally:
            switch.close()
            muse_logger.removeHandler(handler)
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
                await self._write()
                await anyio.to_thread.run_sync(self._close)

    async def _write(self) -> None:
        batch = list(self._queue)
        self._queue.clear()
        dropped, self._dropped = self._dropped, 0
        if batch or dropped:
            await anyio.to_thread.run_sync(self._write_batch, batch, dropped)

    def _write_batch(self, batch: list[Entry], dropped: int) -> None:
        try:
            self.sink.write(batch, dropped)
        except OSError as error:
            self._fail(error)

    def _close(self) -> None:
        try:
            self.sink.close()
        except OSError as error:
            self._fail(error)

    def _fail(self, error: OSError) -> None:
        if not self.sink.failed:
            logger.warning("the trace stops: %s cannot be written (%s)", self.sink.folder, error)
        self.sink.failed = True


class _SwitchInterval:
    """While a writer runs, the interpreter hands the GIL over every ``SWITCH_INTERVAL``
    seconds, not every 5 ms: the writer's thread would otherwise keep the event loop (the
    relay) waiting up to that long each time it takes the GIL. The interval in force before
    the first writer comes back after the last one."""

    running = 0
    before = 0.0

    def close(self) -> None:
        _SwitchInterval.running -= 1
        if _SwitchInterval.running == 0:
            sys.setswitchinterval(_SwitchInterval.before)


def _prompt_switches() -> _SwitchInterval:
    if _SwitchInterval.running == 0:
        _SwitchInterval.before = sys.getswitchinterval()
        sys.setswitchinterval(min(SWITCH_INTERVAL, _SwitchInterval.before))
    _SwitchInterval.running += 1
    return _SwitchInterval()


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
