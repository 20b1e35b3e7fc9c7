"""A connection's lane: offered every frame first, in order, and never a way around the rules.

``send_notification_nowait`` queues only what the writer takes without a wait, and the coalescing
stream's ``send_nowait`` keeps ``send``'s order, bounds and yields.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Final

import anyio
import pytest
from anyio.lowlevel import checkpoint

from muse_acp.rpc import (
    CoalescingSendStream,
    Connection,
    FrameLane,
    FrameReader,
    FrameWriter,
    coalescing,
    encode_notification,
)
from muse_acp.rpc.coalescing import ITEMS_PER_YIELD, MAX_QUEUED_BYTES

from .harness import WAIT, OneRead, ScriptedHandler, Writes

pytestmark = pytest.mark.anyio

FRAMES: Final = [b'{"jsonrpc":"2.0","method":"note","params":{"n":%d}}' % n for n in range(6)]


async def _serve(
    frames: list[bytes], lane: FrameLane, handler: ScriptedHandler | None = None
) -> ScriptedHandler:
    """Serve ``frames`` on a connection with ``lane``; the handler that saw what the lane left."""
    handler = handler or ScriptedHandler()
    data = OneRead(b"".join(frame + b"\n" for frame in frames))
    connection = Connection(
        FrameReader(data), FrameWriter(Writes()), handler, name="lane", lane=lane
    )
    with anyio.fail_after(WAIT):
        await connection.serve()
    return handler


def _idle_reader() -> FrameReader:
    return FrameReader(OneRead(b""))


async def test_the_lane_sees_every_frame_first_and_the_handler_only_those_it_declines() -> None:
    seen: list[str] = []
    order: list[str] = []

    def lane(frame: bytes) -> bool | Awaitable[None]:
        seen.append(frame.decode())
        number = int(frame.split(b'"n":')[1].rstrip(b"}"))
        if number % 2:
            return False

        async def rest() -> None:
            await checkpoint()  # it waits: the next frame must not be read before it ends
            order.append(f"lane {number}")

        if number == 2:
            return rest()
        order.append(f"lane {number}")
        return True

    handler = await _serve(FRAMES, lane)
    assert seen == [frame.decode() for frame in FRAMES]
    assert [params for _, params in handler.notifications] == [{"n": 1}, {"n": 3}, {"n": 5}]
    assert order == ["lane 0", "lane 2", "lane 4"]


async def test_what_the_lane_leaves_waiting_is_finished_before_the_next_frame() -> None:
    log: list[str] = []
    waiting, gate = anyio.Event(), anyio.Event()
    handler = ScriptedHandler()

    def lane(frame: bytes) -> bool | Awaitable[None]:
        if b'"n":0' in frame:

            async def rest() -> None:
                log.append("waiting")
                waiting.set()
                await gate.wait()
                log.append("done")

            return rest()
        log.append(frame.decode())
        return False

    async def open_gate() -> None:
        await waiting.wait()
        gate.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(open_gate)
        await _serve(FRAMES[:2], lane, handler)
    # Frame 1 reached the lane only once what frame 0 left had finished.
    assert log == ["waiting", "done", FRAMES[1].decode()]
    assert [params for _, params in handler.notifications] == [{"n": 1}]


async def test_a_notification_queues_at_once_on_a_coalescing_writer_and_never_on_a_plain_one() -> (
    None
):
    sink = Writes()
    plain = Connection(_idle_reader(), FrameWriter(sink), ScriptedHandler(), name="plain")
    assert plain.send_notification_nowait(encode_notification("note", {"n": 1})) is False
    assert sink.writes == []

    sink = Writes()
    async with coalescing(sink) as stream:
        writer = FrameWriter(stream)
        seen: list[tuple[str, bytes]] = []
        connection = Connection(
            _idle_reader(),
            writer,
            ScriptedHandler(),
            name="coalesced",
            on_frame=lambda way, frame: seen.append((way, frame)),
        )
        assert connection.send_notification_nowait(encode_notification("note", {"n": 1}))
        await connection.notify("note", {"n": 2})
        assert connection.send_notification_nowait(encode_notification("note", {"n": 3}))
        await stream.flush()
    written = b"".join(sink.writes)
    assert written == (
        b'{"jsonrpc":"2.0","method":"note","params":{"n":1}}\n'
        b'{"jsonrpc":"2.0","method":"note","params":{"n":2}}\n'
        b'{"jsonrpc":"2.0","method":"note","params":{"n":3}}\n'
    )
    assert [way for way, _ in seen] == ["out", "out", "out"]


async def test_send_nowait_declines_what_send_would_wait_or_yield_for() -> None:
    sink = Writes()
    async with coalescing(sink) as stream:
        assert isinstance(stream, CoalescingSendStream)
        taken = 0
        while stream.send_nowait(b"x\n"):
            taken += 1
        # The sender yields after ITEMS_PER_YIELD items in a row, so the queue gets written:
        # that is send's to do, and send does it.
        assert taken == ITEMS_PER_YIELD - 1
        await stream.send(b"y\n")
        assert stream.send_nowait(b"z\n")
        assert not stream.send_nowait(b"")
        assert not stream.send_nowait(b"w" * MAX_QUEUED_BYTES)
        await stream.flush()
    assert b"".join(sink.writes) == b"x\n" * taken + b"y\nz\n"


async def test_send_nowait_never_queues_on_a_broken_or_closed_stream() -> None:
    class Broken(Writes):
        async def send(self, item: bytes) -> None:
            raise anyio.BrokenResourceError

    async with coalescing(Broken()) as stream:
        assert isinstance(stream, CoalescingSendStream)
        await stream.send(b"a\n")
        with pytest.raises(anyio.BrokenResourceError):
            await stream.flush()
        assert not stream.send_nowait(b"b\n")
    assert not stream.send_nowait(b"c\n")
