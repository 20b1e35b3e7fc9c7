"""``initialize`` answered before the event loop starts: what ``muse-acp serve`` does first.

Contract: ``answer_first(config)`` reads standard input (blocking) to the end of its first line.
When that is an ``initialize`` request that validates and negotiates, it writes on standard
output the answer the connection would write (the same bytes, ``startup.initialize_answer``
from the probe remembered within ``RECALL_BUDGET``) and the ``Opening`` it returns holds the
negotiation, for the agent's ``Startup`` (``adopt``). Anything else (another frame, one refused
or answered with an error, no line end in ``FIRST_LINE_BYTES`` or before a read fails, end of
input) is left to the connection: ``Opening.stream`` gives it every byte read first, then the
rest of its input. A terminal on stdin, a traced connection (its trace records the first
frame) or a caller off the main thread reads nothing here. A stop signal while it waits returns
None: the agent stops before serving. Nothing here loads the event loop (asyncio, anyio's
backend), which is a good part of what the answer would otherwise wait for.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

from muse_acp.agent.handshake.capabilities import InitializeParams, Negotiated
from muse_acp.agent.handshake.startup import (
    NOT_IN_TIME,
    RECALL_BUDGET,
    foreseen_backend,
    initialize_answer,
    known_binary,
)
from muse_acp.config import AdapterConfig
from muse_acp.host.binary import MuseBinary
from muse_acp.rpc import encode_result, validate_params
from muse_acp.rpc.decoding import RefusedFrame, decode_frame

__all__ = ["FIRST_LINE_BYTES", "EarlyAnswer", "Opening", "answer_first"]

logger: Final = logging.getLogger("muse_acp.agent")

FIRST_LINE_BYTES: Final = 65536
"""Bytes read before the first line end at most: a longer first frame is the connection's."""

_STOPS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""The signals that stop the agent (``server.STOP_SIGNALS``), here before it serves."""


@dataclass(frozen=True, slots=True)
class EarlyAnswer:
    """An ``initialize`` answered before the event loop ran: what ``Startup.adopt`` takes."""

    params: InitializeParams
    negotiated: Negotiated


@dataclass(frozen=True, slots=True)
class Opening:
    """What was read of standard input before the event loop, and answered of it."""

    unread: bytes = b""
    """Bytes read and not answered: the connection reads them first."""
    ended: bool = False
    """Input ended while reading them."""
    answered: EarlyAnswer | None = None

    def stream(self, rest: ByteReceiveStream) -> ByteReceiveStream:
        """The connection's input: ``unread``, then ``rest`` (unless input had ended)."""
        if not self.unread and not self.ended:
            return rest
        return _Unread(self.unread, self.ended, rest)


class _Unread(ByteReceiveStream):
    def __init__(self, unread: bytes, ended: bool, rest: ByteReceiveStream) -> None:
        self._unread = unread
        self._ended = ended
        self._rest = rest

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._unread:
            chunk, self._unread = self._unread[:max_bytes], self._unread[max_bytes:]
            return chunk
        if self._ended:
            raise anyio.EndOfStream
        return await self._rest.receive(max_bytes)

    async def aclose(self) -> None:
        await self._rest.aclose()


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def answer_first(config: AdapterConfig, fd_in: int = 0, fd_out: int = 1) -> Opening | None:
    """Answer the first frame on ``fd_in`` when it is ``initialize`` (see the module contract);
    None when a stop signal came first or the client left before its answer."""
    if (
        config.trace != "off"
        or threading.current_thread() is not threading.main_thread()
        or os.isatty(fd_in)
    ):
        return Opening()
    try:
        with _stopping():
            read, ended = _first_line(fd_in)
    except _Stopped as stop:
        logger.info("received %s; stopping", signal.Signals(stop.signum).name)
        return None
    line, newline, rest = read.partition(b"\n")
    answer = _answer(config, line) if newline else None
    if answer is None:
        return Opening(read, ended)
    frame, early = answer
    if sys.stdout is not None:
        sys.stdout.flush()  # nothing printed may land inside a frame
    try:
        view = memoryview(frame)
        while view:
            view = view[os.write(fd_out, view) :]
    except OSError:
        return None  # the client is gone: nothing is left to serve
    return Opening(rest, ended, early)


@contextmanager
def _stopping() -> Iterator[None]:
    """Stop signals interrupt the wait for the first line (as they would stop the agent)."""

    def stop(signum: int, _: FrameType | None) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in _STOPS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _first_line(fd: int) -> tuple[bytes, bool]:
    """Bytes read up to a line end (or ``FIRST_LINE_BYTES``, or a read that fails: a
    non-blocking input with nothing yet, one this cannot read; the connection then reads on,
    or reports it), and whether input ended."""
    read = bytearray()
    while b"\n" not in read and len(read) < FIRST_LINE_BYTES:
        try:
            chunk = os.read(fd, FIRST_LINE_BYTES)
        except OSError:
            break
        if not chunk:
            return bytes(read), True
        read += chunk
    return bytes(read), False


def _answer(config: AdapterConfig, line: bytes) -> tuple[bytes, EarlyAnswer] | None:
    """The answer frame to ``line`` when it is an ``initialize`` request answered with a
    result; None leaves it to the connection, which answers it as any frame (errors too)."""
    message = decode_frame(line[:-1] if line.endswith(b"\r") else line)
    if isinstance(message, RefusedFrame) or type(message) is not dict:
        return None
    request_id = message.get("id")
    if (
        message.get("jsonrpc") != "2.0"
        or message.get("method") != "initialize"
        or not (type(request_id) is int or type(request_id) is str)
    ):
        return None
    try:
        params = validate_params(InitializeParams, message.get("params"), "initialize")
        known = _recall(config)
        negotiated, response = initialize_answer(
            config, params, foreseen_backend(config.backend, known)
        )
    except Exception:
        return None  # the connection answers it, with the same error
    return encode_result(request_id, response) + b"\n", EarlyAnswer(params, negotiated)


def _recall(config: AdapterConfig) -> MuseBinary | None:
    """``known_binary`` within ``RECALL_BUDGET``, in a worker thread (a data directory that
    does not answer costs no more); an error it raised is raised here."""
    outcome: list[MuseBinary | None] = []
    failure: list[Exception] = []

    def read() -> None:
        try:
            outcome.append(known_binary(config))
        except Exception as error:  # raised again in the caller
            failure.append(error)

    reader = threading.Thread(target=read, name="muse-acp-recall", daemon=True)
    reader.start()
    reader.join(RECALL_BUDGET)
    if failure:
        raise failure[0]
    if not outcome:
        logger.info(NOT_IN_TIME)
        return None
    return outcome[0]
