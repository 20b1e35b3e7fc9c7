"""NDJSON framing: ``FrameReader`` and ``FrameWriter``."""

from __future__ import annotations

import itertools

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.rpc import DEFAULT_MAX_FRAME_BYTES, FrameReader, FrameWriter, OversizedFrame
from muse_acp.rpc.memory import FragmentingSendStream
from muse_acp.rpc.transport import _MAX_PIECES, DEFAULT_READ_CHUNK_BYTES

from .harness import WAIT, memory_pair

pytestmark = pytest.mark.anyio

Frames = list[bytes | OversizedFrame]


async def read_all(chunks: list[bytes], **options: int) -> Frames:
    """Feed ``chunks`` as separate writes, close, and collect every frame read."""
    async with memory_pair(max_buffer=len(chunks) + 1) as ((receive, _), (_, send)):
        for chunk in chunks:
            await send.send(chunk)
        await send.aclose()
        with anyio.fail_after(WAIT):
            return [frame async for frame in FrameReader(receive, **options)]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([b"a\nb\n"], [b"a", b"b"], id="lf"),
        pytest.param([b"a\r\nb\r\n"], [b"a", b"b"], id="cr-lf"),
        pytest.param([b"a\n\n  \n\t\r\nb\n"], [b"a", b"b"], id="blank-lines-skipped"),
        pytest.param([b"a\nb"], [b"a", b"b"], id="final-line-unterminated"),
        pytest.param([b"a\nb\r"], [b"a", b"b"], id="final-line-unterminated-cr"),
        pytest.param([b"ab", b"c", b"d\ne", b"f\n"], [b"abcd", b"ef"], id="split-across-chunks"),
        pytest.param([b"a\r", b"\nb\n"], [b"a", b"b"], id="cr-and-lf-in-different-chunks"),
        pytest.param([b"x\ry\n"], [b"x\ry"], id="inner-cr-kept"),
        pytest.param([], [], id="empty-stream"),
        pytest.param([b"\n\n"], [], id="only-blank-lines"),
    ],
)
async def test_reader_yields_each_non_blank_line_as_one_frame(
    chunks: list[bytes], expected: Frames
) -> None:
    assert await read_all(chunks) == expected


async def test_reader_reassembles_frames_split_at_every_byte_boundary() -> None:
    data = b'{"a":1}\r\n{"b":[2,3]}\n\n{"c":"\xc3\xa9"}\n'
    expected = [b'{"a":1}', b'{"b":[2,3]}', b'{"c":"\xc3\xa9"}']
    for cut in range(len(data) + 1):
        for second_cut in range(cut, len(data) + 1, 5):
            chunks = [data[:cut], data[cut:second_cut], data[second_cut:]]
            assert await read_all([c for c in chunks if c]) == expected, (cut, second_cut)


async def test_reader_reassembles_frames_from_random_fragments() -> None:
    frames = [b'{"n":%d,"pad":"%s"}' % (n, b"x" * (n * 7 % 50)) for n in range(200)]
    async with memory_pair(max_buffer=4) as ((receive, _), (_, send)):
        fragmenting = FragmentingSendStream(send, seed=7, max_fragment=13)

        async def produce() -> None:
            for frame in frames:
                await fragmenting.send(frame + b"\n")
            await fragmenting.aclose()

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(produce)
                received = [frame async for frame in FrameReader(receive)]
    assert received == frames


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([b"0123456789AB\nok\n"], [OversizedFrame(12), b"ok"], id="one-chunk"),
        pytest.param(
            [b"0123", b"4567", b"89AB", b"CD\nok\n"],
            [OversizedFrame(14), b"ok"],
            id="many-chunks",
        ),
        pytest.param([b"ok\n0123456789", b"ABCDEF"], [b"ok", OversizedFrame(16)], id="at-eof"),
        pytest.param([b"0123456789\n"], [b"0123456789"], id="exactly-the-limit"),
        pytest.param([b"01234", b"56789\r\n"], [b"0123456789"], id="limit-plus-cr"),
        pytest.param([b"0123456789A\n"], [OversizedFrame(11)], id="one-byte-over"),
    ],
)
async def test_reader_discards_an_oversized_line_and_reads_on(
    chunks: list[bytes], expected: Frames
) -> None:
    assert await read_all(chunks, max_frame_bytes=10, read_chunk_bytes=4) == expected


async def test_reader_never_holds_more_than_the_limit_of_an_oversized_line() -> None:
    async with memory_pair() as ((receive, _), (_, send)):
        reader = FrameReader(receive, max_frame_bytes=100, read_chunk_bytes=64)
        largest_buffer = 0

        async def produce() -> None:
            nonlocal largest_buffer
            for _ in range(1000):
                await send.send(b"x" * 64)
                largest_buffer = max(largest_buffer, reader._partial_bytes)
            await send.send(b"\nafter\n")
            await send.aclose()

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(produce)
                assert await reader.__anext__() == OversizedFrame(64_000)
                assert await reader.__anext__() == b"after"
    assert 0 < largest_buffer <= 101


async def test_reader_joins_a_line_read_in_many_small_pieces_holding_few_of_them() -> None:
    line = bytes(range(32, 127)) * 200 + b"\r"
    cuts = [0]
    while cuts[-1] < len(line):
        cuts.append(min(cuts[-1] + 1 + len(cuts) % 3, len(line)))
    pieces = [line[start:end] for start, end in itertools.pairwise(cuts)]
    async with memory_pair() as ((receive, _), (_, send)):
        reader = FrameReader(receive, read_chunk_bytes=3)
        most_held = 0

        async def produce() -> None:
            nonlocal most_held
            for piece in pieces:
                await send.send(piece)
                most_held = max(most_held, len(reader._partial))
            await send.send(b"\nnext\n")
            await send.aclose()

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(produce)
                assert [frame async for frame in reader] == [line[:-1], b"next"]
    # Pieces are folded into one buffer as they pile up: a trickling peer cannot make the
    # reader keep one object per read.
    assert most_held <= _MAX_PIECES + 1


class RecordingReceiveStream(ByteReceiveStream):
    def __init__(self) -> None:
        self.sizes: list[int] = []

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.sizes.append(max_bytes)
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        pass


async def test_reader_asks_for_large_reads() -> None:
    stream = RecordingReceiveStream()
    with anyio.fail_after(WAIT):
        assert [frame async for frame in FrameReader(stream)] == []
    assert stream.sizes == [DEFAULT_READ_CHUNK_BYTES]
    assert DEFAULT_MAX_FRAME_BYTES == 16 * 1024 * 1024


def test_reader_rejects_non_positive_limits() -> None:
    with pytest.raises(ValueError, match="positive"):
        FrameReader(RecordingReceiveStream(), max_frame_bytes=0)


class GatedSendStream(ByteSendStream):
    """Records writes; each write first waits for a permit from ``allow``."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self._permits = anyio.Semaphore(0)

    async def send(self, item: bytes) -> None:
        await self._permits.acquire()
        self.written.append(item)

    async def aclose(self) -> None:
        pass

    def allow(self, count: int) -> None:
        for _ in range(count):
            self._permits.release()


async def test_writer_appends_lf_and_keeps_concurrent_frames_whole() -> None:
    frames = [bytes([65 + n]) * (20 + n) for n in range(10)]
    async with memory_pair() as ((receive, _), (_, send)):
        writer = FrameWriter(FragmentingSendStream(send, seed=3, max_fragment=5))
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as task_group:
                for frame in frames:
                    task_group.start_soon(writer.send, frame)
            await writer.aclose()
            received = [frame async for frame in FrameReader(receive)]
    assert (
        sorted(received, key=lambda frame: len(frame) if isinstance(frame, bytes) else 0) == frames
    )


async def test_writer_hands_the_turn_to_waiting_writers_in_arrival_order() -> None:
    stream = GatedSendStream()
    writer = FrameWriter(stream)

    async def stream_three() -> None:
        for n in range(3):
            await writer.send(b"a%d" % n)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(stream_three)
            await anyio.wait_all_tasks_blocked()
            task_group.start_soon(writer.send, b"b0")
            await anyio.wait_all_tasks_blocked()
            stream.allow(4)
    assert stream.written == [b"a0\n", b"b0\n", b"a1\n", b"a2\n"]


async def test_writer_skips_a_waiter_that_was_cancelled() -> None:
    stream = GatedSendStream()
    writer = FrameWriter(stream)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(writer.send, b"first")
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as doomed:
                doomed.cancel()
                await writer.send(b"never")
            task_group.start_soon(writer.send, b"second")
            await anyio.wait_all_tasks_blocked()
            stream.allow(2)
    assert stream.written == [b"first\n", b"second\n"]


async def test_writer_passes_on_a_turn_handed_to_a_waiter_cancelled_before_it_ran() -> None:
    stream = GatedSendStream()
    writer = FrameWriter(stream)
    doomed = anyio.CancelScope()

    async def first_then_cancel_the_next() -> None:
        await writer.send(b"first")
        doomed.cancel()

    async def doomed_writer() -> None:
        with doomed:
            await writer.send(b"never")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(first_then_cancel_the_next)
            await anyio.wait_all_tasks_blocked()
            task_group.start_soon(doomed_writer)
            await anyio.wait_all_tasks_blocked()
            task_group.start_soon(writer.send, b"second")
            await anyio.wait_all_tasks_blocked()
            stream.allow(2)
    assert stream.written == [b"first\n", b"second\n"]
    assert doomed.cancelled_caught
