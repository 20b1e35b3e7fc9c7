"""Stored tool output: generating it, storing it and serving byte ranges of it."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from muse_acp.rpc import RpcError
from muse_acp.sim.model.outputs import (
    BINARY_UNIT,
    TEXT_MEDIA_TYPE,
    TEXT_UNIT,
    OutputSink,
    pattern_chunks,
    read_range,
)
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.store import SessionMeta, Store


def test_patterns_are_exactly_the_requested_size_in_bounded_chunks() -> None:
    chunks = list(pattern_chunks(TEXT_UNIT, 100, chunk=30))
    assert [len(chunk) for chunk in chunks] == [30, 30, 30, 10]
    assert b"".join(chunks) == (TEXT_UNIT * 8)[:100]
    assert list(pattern_chunks(BINARY_UNIT, 0)) == []


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Store, str, str, str]:
    store = Store(tmp_path)
    session_id = new_uuid7()
    meta = SessionMeta(session_id, "t", "t", None, None, None, "promptUnmatched")
    lease = store.create(meta)
    assert lease is not None
    item_id = new_uuid7()
    sink = OutputSink(store, session_id, item_id, media_type=TEXT_MEDIA_TYPE)
    sink.write("aé€😀z".encode())
    ref = sink.finish()
    assert (ref.byte_len, ref.availability) == (11, "available")
    lease.release()
    return store, session_id, item_id, ref.id


def test_ranges_never_end_inside_a_character(stored: tuple[Store, str, str, str]) -> None:
    store, session_id, item_id, ref_id = stored
    whole = read_range(store, session_id, item_id, ref_id, 0, 100)
    assert (whole.content, whole.encoding, whole.byte_len, whole.eof) == (
        "aé€😀z",
        "utf8",
        11,
        True,
    )
    cut = read_range(store, session_id, item_id, ref_id, 0, 4)
    assert (cut.content, cut.byte_len, cut.eof) == ("aé", 3, False)
    tiny = read_range(store, session_id, item_id, ref_id, 3, 1)
    assert (tiny.encoding, base64.b64decode(tiny.content)) == ("base64", "€".encode()[:1])


def test_an_offset_inside_a_character_names_the_next_boundary(
    stored: tuple[Store, str, str, str],
) -> None:
    store, session_id, item_id, ref_id = stored
    with pytest.raises(RpcError) as caught:
        read_range(store, session_id, item_id, ref_id, 7, 10)
    assert caught.value.code == -32602
    assert caught.value.data == {
        "kind": "invalidParams",
        "retryable": False,
        "alignedNextOffset": 10,
    }
    with pytest.raises(RpcError) as past:
        read_range(store, session_id, item_id, ref_id, 12, 10)
    assert past.value.code == -32602
    with pytest.raises(RpcError) as unknown:
        read_range(store, session_id, item_id, new_uuid7(), 0, 10)
    assert unknown.value.code == -32041
