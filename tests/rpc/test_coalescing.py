"""Coalescing writes: bursts become one write, order is kept, nothing is held back or lost."""

from __future__ import annotations

import os

import anyio
import pytest
from anyio.abc import ByteSendStream

from muse_acp.rpc import FrameWriter
from muse_acp.rpc.coalescing import (
    ITEMS_PER_YIELD,
    MAX_QUEUED_BYTES,
    CoalescingSendStream,
    coalescing,
)
from muse_acp.rpc.stdio import FdSendStream

pytestmark = pytest.mark.anyio

WAIT = 5.0


class Recorder(ByteSendStream):
    """An inner stream that records each write; ``gate`` (when set) holds writes until opened."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.gate: anyio.Event | None = None
        self.failure: Exception | None = None
        self.closed = False

    async def send(self, item: bytes) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        self.writes.append(item)

    async def aclose(self) -> None:
        self.closed = True

    @property
    def data(self) -> bytes:
        return b"".join(self.writes)


async def test_a_burst_sent_without_yielding_is_written_once_when_the_sender_yields() -> None:
    inner = Recorder()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            for index in range(10):
                await stream.send(b"frame %d\n" % index)
            assert inner.writes == []
            await anyio.wait_all_tasks_blocked()
    assert inner.writes == [b"".join(b"frame %d\n" % index for index in range(10))]


async def test_a_lone_frame_goes_out_on_the_next_pass_of_the_event_loop() -> None:
    inner = Recorder()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            await stream.send(b"only\n")
            await anyio.wait_all_tasks_blocked()
            assert inner.writes == [b"only\n"]


async def test_a_sender_that_never_waits_still_yields_so_its_frames_are_written() -> None:
    inner = Recorder()
    sent = 0
    seen: list[int] = []
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:

            async def observe() -> None:
                seen.append(sent)

            tasks.start_soon(observe)
            for _ in range(3 * ITEMS_PER_YIELD):
                await stream.send(b"x")
                sent += 1
    assert seen
    assert 0 < seen[0] <= ITEMS_PER_YIELD
    assert len(inner.writes) > 1, "written while the sender went on, not only at its end"
    assert inner.data == b"x" * (3 * ITEMS_PER_YIELD)


async def test_a_large_item_is_written_directly_after_everything_queued_before_it() -> None:
    inner = Recorder()
    large = b"L" * MAX_QUEUED_BYTES
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            await stream.send(b"a\n")
            await stream.send(large)
            await stream.send(b"b\n")
            await anyio.wait_all_tasks_blocked()
    assert inner.writes == [b"a\n", large, b"b\n"]


async def test_a_send_begun_behind_a_waiting_one_is_never_written_before_it() -> None:
    # An answer sent after a turn's last update must follow it, even when the update had to
    # wait (here: a large one, while the writer is busy) and the answer finds room at once.
    inner = Recorder()
    inner.gate = anyio.Event()
    large = b"L" * MAX_QUEUED_BYTES
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:
            await stream.send(b"first\n")
            await anyio.wait_all_tasks_blocked()  # being written: the writer is busy
            for sent in (large, b"update\n", large):
                tasks.start_soon(stream.send, sent)
                await anyio.wait_all_tasks_blocked()
            tasks.start_soon(stream.send, b"answer\n")
            await anyio.wait_all_tasks_blocked()
            assert not stream.send_nowait(b"later\n"), "nothing jumps the line"
            inner.gate.set()
    assert inner.writes == [b"first\n", large, b"update\n", large, b"answer\n"]


async def test_a_frame_queued_before_a_large_send_is_written_though_that_send_is_cancelled() -> (
    None
):
    # An answer already reported sent must reach the client even if a large frame sent next
    # (a permission request with a big diff) has its sender cancelled while the pipe is full.
    inner = Recorder()
    inner.gate = anyio.Event()
    large = b"L" * MAX_QUEUED_BYTES
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:
            await stream.send(b"answer\n")
            scope = anyio.CancelScope()

            async def send_large() -> None:
                with scope:
                    await stream.send(large)

            tasks.start_soon(send_large)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            inner.gate.set()
            await stream.send(b"later\n")
    assert inner.data == b"answer\n" + large + b"later\n"


async def test_cancelling_a_large_send_to_a_slow_reader_leaves_the_stream_whole() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    large = b'{"big":"' + b"x" * MAX_QUEUED_BYTES + b'"}\n'
    later = b'{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}\n'
    received = bytearray()

    async def client_reads() -> None:
        while len(received) < len(large + later):
            await anyio.wait_readable(read_fd)
            received.extend(os.read(read_fd, 1 << 20))

    try:
        with anyio.fail_after(WAIT):
            async with coalescing(FdSendStream(write_fd, pollable=True)) as stream:
                async with anyio.create_task_group() as tasks:
                    scope = anyio.CancelScope()

                    async def send_large() -> None:
                        with scope:
                            await stream.send(large)

                    tasks.start_soon(send_large)
                    await anyio.wait_all_tasks_blocked()  # the pipe is full; nobody reads
                    scope.cancel()
                await stream.send(later)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(client_reads)  # the client reads again
                    await stream.flush()
                await stream.send(b"still\n")
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert bytes(received) == large + later


async def test_a_waiting_sender_cancelled_keeps_its_place_and_its_frame() -> None:
    # Every item is queued when its send begins: a waiting sender whose wait is cancelled (a
    # turn winding down) neither loses its frame nor lets a later one overtake it, and the
    # senders waiting for room all resume once the writer has taken the queue.
    inner = Recorder()
    inner.gate = anyio.Event()
    fill = b"f" * (MAX_QUEUED_BYTES // 2 - 1) + b"\n"
    returned: list[bytes] = []
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:
            await stream.send(b"first\n")
            await anyio.wait_all_tasks_blocked()  # being written: the writer is busy
            await stream.send(fill)
            await stream.send(fill)  # the queue is full now
            scope = anyio.CancelScope()

            async def send(item: bytes, within: anyio.CancelScope | None = None) -> None:
                with within or anyio.CancelScope():
                    await stream.send(item)
                    returned.append(item)

            tasks.start_soon(send, b"one\n")
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(send, b"two\n", scope)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(send, b"three\n")
            await anyio.wait_all_tasks_blocked()
            assert returned == [], "the queue is full: they wait"
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            inner.gate.set()
    assert sorted(returned) == [b"one\n", b"three\n"]
    assert inner.data == b"first\n" + fill + fill + b"one\ntwo\nthree\n"


async def test_senders_wait_while_the_queue_is_full_and_resume_once_it_is_written() -> None:
    inner = Recorder()
    inner.gate = anyio.Event()
    item = b"y" * (MAX_QUEUED_BYTES // 4)
    sent = 0
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:

            async def send_many() -> None:
                nonlocal sent
                for _ in range(12):
                    await stream.send(item)
                    sent += 1

            tasks.start_soon(send_many)
            await anyio.wait_all_tasks_blocked()
            assert sent < 12
            assert inner.writes == []
            inner.gate.set()
    assert sent == 12
    assert inner.data == item * 12


async def test_a_failed_write_breaks_every_later_send() -> None:
    inner = Recorder()
    inner.failure = anyio.BrokenResourceError()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            await stream.send(b"lost\n")
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(anyio.BrokenResourceError):
                await stream.send(b"after\n")


async def test_closing_writes_what_is_queued_then_closes_the_inner_stream() -> None:
    inner = Recorder()
    stream = CoalescingSendStream(inner)
    with anyio.fail_after(WAIT):
        await stream.send(b"queued\n")
        await stream.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(b"late\n")
    assert inner.writes == [b"queued\n"]
    assert inner.closed


async def test_leaving_the_block_writes_what_is_still_queued() -> None:
    inner = Recorder()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            await stream.send(b"last\n")
    assert inner.writes == [b"last\n"]
    assert not inner.closed


async def test_frames_from_many_concurrent_writers_still_go_out_in_large_writes() -> None:
    # Many sessions streaming at once through one connection: each writer's frames stay whole
    # and in its own order, and the writes stay few. (A turn passed from writer to writer used
    # to turn every frame into a hand-off and a write of its own once writers contended.)
    writers, frames_each = 8, 4 * ITEMS_PER_YIELD
    inner = Recorder()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream, anyio.create_task_group() as tasks:
            framing = FrameWriter(stream)

            async def write_frames(writer: int) -> None:
                for index in range(frames_each):
                    await framing.send(b"%d:%d" % (writer, index))

            for writer in range(writers):
                tasks.start_soon(write_frames, writer)
    lines = inner.data.split(b"\n")[:-1]
    assert len(lines) == writers * frames_each
    for writer in range(writers):
        mine = [line for line in lines if line.startswith(b"%d:" % writer)]
        assert mine == [b"%d:%d" % (writer, index) for index in range(frames_each)]
    assert len(inner.writes) <= writers * frames_each // ITEMS_PER_YIELD, len(inner.writes)


class Immediate(Recorder):
    """A recorder that also takes writes without a wait, ``room`` bytes at most (None: all)."""

    def __init__(self, room: int | None = None) -> None:
        super().__init__()
        self.room = room
        self.immediate: list[bytes] = []
        self.handed_over: list[bool] = []

    def send_immediately(self, data: bytes, *, hand_over: bool = False) -> int:
        taken = data if self.room is None else data[: self.room]
        if self.room is not None:
            self.room -= len(taken)
        if taken:
            self.immediate.append(taken)
            self.writes.append(taken)
        self.handed_over.append(hand_over)
        return len(taken)


async def test_now_writes_the_queue_at_once_in_order_without_a_pass_of_the_event_loop() -> None:
    inner = Immediate()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            assert stream.send_nowait(b"a\n")
            assert stream.send_nowait(b"first words\n", now=True)
            # Written before this task yields: nothing else had to run first.
            assert inner.immediate == [b"a\nfirst words\n"]
            assert stream.send_nowait(b"b\n")
            assert inner.immediate == [b"a\nfirst words\n"]  # later frames wait for the pass
            await stream.flush()
    assert inner.data == b"a\nfirst words\nb\n"


async def test_a_hand_over_goes_with_the_immediate_write_it_was_asked_for_only() -> None:
    inner = Immediate()
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            assert stream.send_nowait(b"thought\n", now=True)
            assert stream.send_nowait(b"queued\n", hand_over=True)  # not written now: no hand over
            assert stream.send_nowait(b"answer\n", now=True, hand_over=True)
            await stream.flush()
    assert inner.immediate == [b"thought\n", b"queued\nanswer\n"]
    assert inner.handed_over == [False, True]


async def test_what_an_immediate_write_leaves_goes_out_first_and_whole() -> None:
    inner = Immediate(room=5)
    with anyio.fail_after(WAIT):
        async with coalescing(inner) as stream:
            assert stream.send_nowait(b"first words\n", now=True)
            assert stream.send_nowait(b"next\n")
            await stream.flush()
    assert inner.immediate == [b"first"]
    assert inner.data == b"first words\nnext\n"
    assert inner.writes[1] == b" words\nnext\n"


async def test_now_over_a_pipe_writes_before_the_sender_yields() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    try:
        with anyio.fail_after(WAIT):
            async with coalescing(FdSendStream(write_fd, pollable=True)) as stream:
                assert stream.send_nowait(b'{"n":1}\n', now=True)
                assert os.read(read_fd, 1 << 16) == b'{"n":1}\n'
                assert stream.send_nowait(b'{"n":2}\n')
                with pytest.raises(BlockingIOError):
                    os.read(read_fd, 1 << 16)  # without ``now``: on the next pass
                await stream.flush()
                assert os.read(read_fd, 1 << 16) == b'{"n":2}\n'
    finally:
        os.close(read_fd)
        os.close(write_fd)
