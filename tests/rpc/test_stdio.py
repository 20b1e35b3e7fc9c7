"""Standard input and output as streams: pipes polled by the event loop, files via threads."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import anyio
import pytest

from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    JsonValue,
    RequestContext,
    Result,
    RpcError,
    encode_message,
    open_stdio,
)
from muse_acp.rpc.stdio import (
    FULL_PIPE_BYTES,
    MAX_WIDE_PIPES,
    PIPE_BYTES,
    WRITES_PER_YIELD,
    FdReceiveStream,
    FdSendStream,
    narrowed,
    widen_pipe,
)

if sys.platform != "win32":
    import fcntl

from .harness import WAIT

pytestmark = pytest.mark.anyio

ECHO_PEER = Path(__file__).with_name("echo_peer.py")
CHILD_WAIT = 60.0
"""A child interpreter importing pydantic can be slow to start on a loaded machine."""


@contextmanager
def os_pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    try:
        yield read_fd, write_fd
    finally:
        for fd in (read_fd, write_fd):
            with suppress(OSError):
                os.close(fd)


class Parent:
    def __init__(self) -> None:
        self.notifications: list[tuple[str, JsonValue]] = []

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        if method == "name":
            return "muse"
        raise RpcError.method_not_found(method)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        self.notifications.append((method, params))


async def test_a_child_process_serves_over_its_stdio_pipes() -> None:
    parent = Parent()
    command = [sys.executable, str(ECHO_PEER)]
    with anyio.fail_after(CHILD_WAIT):
        async with await anyio.open_process(command, stderr=subprocess.DEVNULL) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            conn = Connection(
                FrameReader(process.stdout), FrameWriter(process.stdin), parent, name="parent"
            )
            async with anyio.create_task_group() as task_group:
                await task_group.start(conn.serve)
                big = {"text": "x" * (1 << 20) + "é\n漢"}
                echoed = await conn.request("echo", big)
                greeting = await conn.request("ask")
                await conn.aclose()
            exit_code = await process.wait()
    assert echoed == big
    assert greeting == {"hello": "muse"}
    assert parent.notifications == [("progress", {"size": len(encode_message(big))})]
    assert exit_code == 0


async def test_pipes_are_non_blocking_while_open_and_restored_after() -> None:
    with os_pipe() as (read_fd, write_fd):
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (receive, send):
            assert not os.get_blocking(read_fd)
            assert not os.get_blocking(write_fd)
            with anyio.fail_after(WAIT):
                await send.send(b"hello\n")
                assert await receive.receive() == b"hello\n"
        assert os.get_blocking(read_fd)
        assert os.get_blocking(write_fd)


async def test_a_frame_larger_than_the_pipe_buffer_is_written_whole() -> None:
    frame = bytes(range(256)) * 8192
    with os_pipe() as (read_fd, write_fd):
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (receive, send):
            received = bytearray()

            async def drain() -> None:
                while len(received) < len(frame):
                    received.extend(await receive.receive())

            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(drain)
                    await send.send(frame)
    assert bytes(received) == frame


async def test_a_write_cancelled_midway_leaves_the_stream_broken() -> None:
    with os_pipe() as (read_fd, write_fd):
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (_, send):
            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(send.send, b"x" * (4 << 20))
                    await anyio.wait_all_tasks_blocked()
                    task_group.cancel_scope.cancel()
                with pytest.raises(anyio.BrokenResourceError):
                    await send.send(b"next\n")


@pytest.mark.parametrize("pollable", [True, False])
async def test_writing_to_a_pipe_nobody_reads_is_a_broken_resource(pollable: bool) -> None:
    with os_pipe() as (read_fd, write_fd):
        os.close(read_fd)
        os.set_blocking(write_fd, not pollable)
        send = FdSendStream(write_fd, pollable=pollable)
        with anyio.fail_after(WAIT), pytest.raises(anyio.BrokenResourceError):
            await send.send(b"lost\n")
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(b"lost again\n")


async def test_regular_files_are_read_and_written_through_worker_threads(
    tmp_path: Path,
) -> None:
    source = tmp_path / "in.ndjson"
    source.write_bytes(b'{"a":1}\r\n\n{"b":2}')
    target = tmp_path / "out.ndjson"
    with source.open("rb") as read_file, target.open("wb") as write_file:
        read_fd, write_fd = read_file.fileno(), write_file.fileno()
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (receive, send):
            with anyio.fail_after(WAIT):
                frames = [frame async for frame in FrameReader(receive)]
                writer = FrameWriter(send)
                await writer.send(b'{"c":3}')
                await writer.send(b'{"d":4}')
                await writer.aclose()
                with pytest.raises(anyio.ClosedResourceError):
                    await writer.send(b"{}")
            assert os.get_blocking(read_fd)
            assert os.get_blocking(write_fd)
    assert frames == [b'{"a":1}', b'{"b":2}']
    assert target.read_bytes() == b'{"c":3}\n{"d":4}\n'


async def test_a_blocked_threaded_read_can_be_cancelled() -> None:
    with os_pipe() as (read_fd, write_fd):
        receive = FdReceiveStream(read_fd, pollable=False)
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(receive.receive)
                await anyio.wait_all_tasks_blocked()
                task_group.cancel_scope.cancel()
        # Lets the abandoned worker thread finish its read.
        os.write(write_fd, b"wake\n")
        await receive.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await receive.receive()


async def test_writes_that_never_block_still_let_other_tasks_run() -> None:
    written = 0
    seen_by_other_task: list[int] = []

    async def other_task() -> None:
        seen_by_other_task.append(written)

    with os_pipe() as (read_fd, write_fd):
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (_, send):
            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(other_task)
                    for _ in range(100):
                        await send.send(b"{}\n")
                        written += 1
                await send.send(b"")
            assert os.read(read_fd, 1000) == b"{}\n" * 100
    assert seen_by_other_task
    assert 0 < seen_by_other_task[0] <= WRITES_PER_YIELD


async def test_closing_an_owned_pipe_end_is_its_readers_end_of_input() -> None:
    read, write = os.pipe()
    for fd in (read, write):
        os.set_blocking(fd, False)
    stream = FdSendStream(write, pollable=True, owned=True)
    reader = FdReceiveStream(read, pollable=True)
    try:
        await stream.send(b"last words\n")
        await stream.aclose()
        await stream.aclose()  # idempotent: the descriptor is closed once
        with anyio.fail_after(WAIT):
            assert await reader.receive() == b"last words\n"
            with pytest.raises(anyio.EndOfStream):
                await reader.receive()
    finally:
        os.close(read)


async def test_closing_a_stream_that_does_not_own_its_descriptor_leaves_it_open() -> None:
    read, write = os.pipe()
    try:
        await FdSendStream(write, pollable=False).aclose()
        os.write(write, b"still open")
        assert os.read(read, 100) == b"still open"
    finally:
        os.close(read)
        os.close(write)


def _pipe_bytes(fd: int) -> int:
    """What the pipe ``fd`` holds (its default size where the size cannot be read)."""
    if sys.platform != "linux":
        return FULL_PIPE_BYTES
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)


async def test_a_pipe_is_widened_once_a_frame_fills_it_and_not_before() -> None:
    small, large = b"x" * 100, bytes(range(256)) * 8192  # 100 bytes, then 2 MiB
    with os_pipe() as (read_fd, write_fd):
        async with open_stdio(read_fd=read_fd, write_fd=write_fd) as (receive, send):
            received = bytearray()

            async def drain(size: int) -> None:
                while len(received) < size:
                    received.extend(await receive.receive(PIPE_BYTES))

            with anyio.fail_after(WAIT):
                await send.send(small)
                await drain(len(small))
                assert _pipe_bytes(write_fd) == FULL_PIPE_BYTES  # small frames: left as it was
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(drain, len(small) + len(large))
                    await send.send(large)
            expected = PIPE_BYTES if sys.platform == "linux" else FULL_PIPE_BYTES
            assert _pipe_bytes(write_fd) == expected
    assert bytes(received) == small + large


def test_a_process_widens_no_more_pipes_than_its_budget() -> None:
    pipes = [os.pipe() for _ in range(MAX_WIDE_PIPES + 2)]
    widened: list[bool] = []
    released = 0
    try:
        widened = [widen_pipe(write_fd) for _, write_fd in pipes]
        if sys.platform != "linux":
            assert not any(widened)
            return
        # Pipes another test left widened may hold part of the budget; none is left over.
        assert 0 < widened.count(True) <= MAX_WIDE_PIPES
        assert widened[-2:] == [False, False]
        assert _pipe_bytes(pipes[-1][1]) == FULL_PIPE_BYTES
        narrowed()  # one of them closed: its share of the budget is free again
        released = 1
        widened.append(widen_pipe(pipes[-1][1]))
        assert widened[-1] is True
        assert _pipe_bytes(pipes[-1][1]) == PIPE_BYTES
    finally:
        for _ in range(widened.count(True) - released):
            narrowed()
        for pair in pipes:
            for fd in pair:
                os.close(fd)


@pytest.mark.skipif(sys.platform == "win32", reason="no sched_yield, and nothing polled")
def test_an_immediate_write_handed_over_gives_up_the_core_once_it_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1))
    with os_pipe() as (read_fd, write_fd):
        os.set_blocking(write_fd, False)
        send = FdSendStream(write_fd, pollable=True)
        assert send.send_immediately(b"plain\n") == 6
        assert yields == []
        assert send.send_immediately(b"first words\n", hand_over=True) == 12
        assert yields == [1]
        while send.send_immediately(b"x" * FULL_PIPE_BYTES):  # fill the pipe
            pass
        assert send.send_immediately(b"more\n", hand_over=True) == 0
        assert yields == [1], "nothing written, nothing to hand over"
        assert os.read(read_fd, 18) == b"plain\nfirst words\n"
