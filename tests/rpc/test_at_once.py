"""Work done as a request is read, and a request written at once.

A connection's ``early_start`` sees each request as it is read, before the request's task runs,
and a failure of it changes nothing about the request's answer. ``start_request_at_once`` writes
a request whole at once over a pipe, or writes nothing and says so (a full pipe, every slot
taken, another write under way), and its answer comes back as ``start_request``'s does. A pipe's
``send_whole_at_once`` writes all of a small frame or none of it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import pytest

from muse_acp.rpc import Connection, FrameReader, FrameWriter, JsonValue, RequestContext
from muse_acp.rpc.stdio import FdReceiveStream, FdSendStream

from .harness import WAIT, ScriptedHandler, serving

pytestmark = pytest.mark.anyio

PIPE_BUF: Final = 4096  # POSIX's least; Linux's too


async def test_an_early_start_sees_a_request_before_its_handler_runs() -> None:
    seen: list[tuple[str, JsonValue, int]] = []
    handler = ScriptedHandler()

    def early(method: str, params: JsonValue, ctx: RequestContext) -> None:
        seen.append((method, params, len(handler.slow_started)))

    async with serving(handler, early_start=early) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow", "params": {"n": 1}})
        with anyio.fail_after(WAIT):
            await handler.slow_event.wait()
        handler.release.set()
        answer = await peer.receive()
    assert seen == [("slow", {"n": 1}, 0)], "seen as it was read, before its handler began"
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"released": 1}}


async def test_a_failing_early_start_is_logged_and_the_request_answered_all_the_same(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def early(method: str, params: JsonValue, ctx: RequestContext) -> None:
        raise RuntimeError("an early start's own fault")

    with caplog.at_level(logging.ERROR, logger="muse_acp.rpc"):
        async with serving(ScriptedHandler(), early_start=early) as (_, peer):
            await peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "echo", "params": [1]})
            answer = await peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": [1]}
    assert "the early start of echo failed" in caplog.text


@asynccontextmanager
async def over_a_pipe(
    max_pending_outgoing: int = 1024,
) -> AsyncIterator[tuple[Connection, int, FdReceiveStream]]:
    """A connection writing to a pipe (its read end returned raw, and as a stream answers
    are read from), and reading answers written to another pipe's write end."""
    to_peer_read, to_peer_write = os.pipe()
    from_peer_read, from_peer_write = os.pipe()
    for fd in (to_peer_write, from_peer_read):
        os.set_blocking(fd, False)
    writer = FdSendStream(to_peer_write, pollable=True, owned=True)
    reader = FdReceiveStream(from_peer_read, pollable=True, owned=True)
    peer_reads = FdReceiveStream(to_peer_read, pollable=True, owned=True)
    os.set_blocking(to_peer_read, False)
    conn = Connection(
        FrameReader(reader),
        FrameWriter(writer),
        ScriptedHandler(),
        name="pipe",
        max_pending_outgoing=max_pending_outgoing,
    )
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(conn.serve)
            yield conn, from_peer_write, peer_reads
            os.close(from_peer_write)
            await conn.aclose()
    finally:
        await peer_reads.aclose()


async def test_a_request_written_at_once_is_answered_as_any_request() -> None:
    async with over_a_pipe() as (conn, answers, peer):
        sent = conn.start_request_at_once("ping", {"n": 1})
        assert sent is not None
        with anyio.fail_after(WAIT):
            assert (
                await peer.receive()
                == b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1}}\n'
            )
        os.write(answers, b'{"jsonrpc":"2.0","id":1,"result":"pong"}\n')
        with anyio.fail_after(WAIT):
            assert await sent.result() == "pong"


async def test_nothing_is_written_at_once_when_the_pipe_cannot_take_the_frame_whole() -> None:
    pad = {"pad": "x" * 1000}
    async with over_a_pipe() as (conn, _, peer):
        room = 0
        while conn.start_request_at_once("fill", pad) is not None:
            room += 1
        assert room > 0, "the pipe took frames until one did not fit"
        with anyio.fail_after(WAIT):
            taken = b""
            while taken.count(b"\n") < room:
                taken += await peer.receive()
        frames = taken.split(b"\n")
        assert frames[-1] == b"", "no frame was cut: each went whole or not at all"
        assert all(frame.endswith(b'"}}') for frame in frames[:-1])
        again = conn.start_request_at_once("fill", pad)
        assert again is not None, "room again once the peer read"


async def test_a_request_written_at_once_hands_the_core_over_when_asked_and_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1))
    async with over_a_pipe() as (conn, _, peer):
        assert conn.start_request_at_once("plain", None) is not None
        assert yields == []
        assert conn.start_request_at_once("waited-for", None, hand_over=True) is not None
        assert yields == [1], "given up once the frame was written"
        pad = {"pad": "x" * 1000}
        while conn.start_request_at_once("fill", pad) is not None:
            pass
        assert conn.start_request_at_once("waited-for", pad, hand_over=True) is None
        assert yields == [1], "nothing written, nothing handed over"
        with anyio.fail_after(WAIT):
            assert b'"method":"plain"' in await peer.receive()


async def test_nothing_is_written_at_once_without_a_free_slot() -> None:
    async with over_a_pipe(max_pending_outgoing=1) as (conn, answers, peer):
        first = conn.start_request_at_once("first", None)
        assert first is not None
        assert conn.start_request_at_once("second", None) is None, "the one slot is taken"
        with anyio.fail_after(WAIT):
            await peer.receive()
        os.write(answers, b'{"jsonrpc":"2.0","id":1,"result":null}\n')
        with anyio.fail_after(WAIT):
            await first.result()
        second = conn.start_request_at_once("second", None)
        assert second is not None
        with anyio.fail_after(WAIT):
            assert b'"id":2' in await peer.receive(), "ids go on where they were"


async def test_a_pipe_writes_a_small_frame_whole_or_not_at_all() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stream = FdSendStream(write_end, pollable=True, owned=True)
    try:
        assert stream.send_whole_at_once(b"x" * 10)
        assert not stream.send_whole_at_once(b"x" * (PIPE_BUF + 1)), "too large to be whole"
        frame = b"y" * 1000
        written = 1
        while stream.send_whole_at_once(frame):
            written += 1
        data = b""
        while len(data) < 10 + (written - 1) * len(frame):
            data += os.read(read_end, 1 << 20)
        assert data == b"x" * 10 + frame * (written - 1), "every frame whole, none cut"
    finally:
        await stream.aclose()
        os.close(read_end)


def test_only_a_pipe_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "file"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    stream = FdSendStream(fd, pollable=False)
    try:
        assert not stream.send_whole_at_once(b"x"), "a file is written by worker threads"
    finally:
        os.close(fd)
    assert path.stat().st_size == 0
