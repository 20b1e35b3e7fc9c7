"""Stored-output reads: the reference lookup over bounded history, page checks, error mapping."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.cards.output_reference import (
    HISTORY_PAGE_SIZE,
    MAX_HISTORY_PAGES,
    OutputRead,
    check_page,
    find_latest_item,
    host_read_error,
    latest_revision,
    page_problem,
    page_response,
    stored_reference,
)
from muse_acp.agent.context import AgentContext
from muse_acp.agent.handshake.capabilities import Negotiated
from muse_acp.agent.methods.stored_output import handle_read_output
from muse_acp.config import AdapterConfig
from muse_acp.rpc import RawJson, RequestContext, RpcError, encode_value
from muse_acp.rpc.decoding import decode_frame
from muse_acp.rpc.splice import result_string_token
from muse_acp_wire import acp, msp

from .fakes import add_session

pytestmark = pytest.mark.anyio

SESSION = "session-1"
ITEM = "item-1"
REF = "ref-1"
WAIT = 5.0


def _ref(ref_id: str = REF, byte_len: int = 300, availability: str = "available") -> dict[str, Any]:
    return {
        "id": ref_id,
        "uri": f"store://outputs/{ref_id}",
        "kind": "tool_output",
        "byteLen": byte_len,
        "availability": availability,
        "mediaType": "text/plain",
    }


def _tool(revision: int, ref: dict[str, Any] | None = None, item_id: str = ITEM) -> dict[str, Any]:
    item: dict[str, Any] = {
        "itemId": item_id,
        "kind": "toolCall",
        "turnId": "turn-1",
        "revision": revision,
        "status": "completed" if revision > 1 else "inProgress",
        "tool": "bash",
        "callId": f"call-{item_id}",
        "args": '{"command": "yes"}',
    }
    if ref is not None:
        item["outputRef"] = ref
    return item


def _event(
    item: dict[str, Any], method: str = "item/updated", session_id: str = SESSION
) -> msp.ViewEvent:
    return msp.ViewEvent(
        method=method,
        params={"sessionId": session_id, "viewCursor": f"v:{session_id}:1", "item": item},
    )


def _filler(count: int) -> list[msp.ViewEvent]:
    return [_event(_tool(1, item_id=f"other-{n}")) for n in range(count)]


def _read(offset: int = 0, length: int = 65536) -> OutputRead:
    return OutputRead(SESSION, ITEM, REF, offset, length)


# -- latest revision within a page ---------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "revision"),
    [
        ([_event(_tool(1), "item/started"), _event(_tool(2, _ref()), "item/completed")], 2),
        ([_event(_tool(3, _ref())), _event(_tool(2))], 3),
        ([_event(_tool(2, _ref())), _event(_tool(5), session_id="another-session")], 2),
        ([_event(_tool(1)), _event(_tool(4, item_id="other"))], 1),
        ([msp.ViewEvent(method="turn/started", params={"sessionId": SESSION}), *_filler(3)], None),
        ([], None),
    ],
    ids=[
        "the completed revision after the start",
        "a higher revision wins over a newer lower one",
        "another session's events do not count",
        "other items do not count",
        "no event about the item",
        "an empty page",
    ],
)
def test_the_latest_revision_of_the_item_in_a_page_is_found(
    events: list[msp.ViewEvent], revision: int | None
) -> None:
    found = latest_revision(events, SESSION, ITEM)
    assert (found.revision if found is not None else None) == revision


def test_an_unreadable_event_about_the_item_is_an_inconsistent_page() -> None:
    broken = msp.ViewEvent(method="item/updated", params={"sessionId": SESSION, "item": _tool(2)})
    with pytest.raises(RpcError) as raised:
        latest_revision([_event(_tool(1)), broken], SESSION, ITEM)
    assert raised.value.code == -32603


# -- paging history backward ---------------------------------------------------------------


class FakeHistory:
    """Backward pages served newest first, recording each requested cursor."""

    def __init__(self, pages: list[msp.ViewPageResult]) -> None:
        self.pages = pages
        self.cursors: list[str | None] = []

    async def __call__(self, cursor: str | None) -> msp.ViewPageResult:
        self.cursors.append(cursor)
        return self.pages[len(self.cursors) - 1]


def _pages(contents: list[list[msp.ViewEvent]]) -> list[msp.ViewPageResult]:
    return [
        msp.ViewPageResult(
            events=events, next_cursor=f"c{n + 1}" if n + 1 < len(contents) else None
        )
        for n, events in enumerate(contents)
    ]


async def _find(history: FakeHistory) -> msp.Item | None:
    with anyio.fail_after(WAIT):
        return await find_latest_item(history, SESSION, ITEM)


async def test_history_is_paged_backward_with_the_cursors_the_host_gave() -> None:
    history = FakeHistory(_pages([_filler(2), _filler(2), [_event(_tool(2, _ref()))]]))
    found = await _find(history)
    assert found is not None
    assert found.revision == 2
    assert history.cursors == [None, "c1", "c2"]


async def test_a_reference_on_the_last_page_of_the_budget_is_found() -> None:
    contents = [_filler(HISTORY_PAGE_SIZE)] * (MAX_HISTORY_PAGES - 1)
    history = FakeHistory(_pages([*contents, [_event(_tool(2, _ref()))]]))
    assert await _find(history) is not None
    assert len(history.cursors) == MAX_HISTORY_PAGES


async def test_a_reference_beyond_the_page_budget_is_not_found() -> None:
    contents = [_filler(HISTORY_PAGE_SIZE)] * MAX_HISTORY_PAGES
    history = FakeHistory(_pages([*contents, [_event(_tool(2, _ref()))]]))
    assert await _find(history) is None
    assert len(history.cursors) == MAX_HISTORY_PAGES


async def test_the_newest_page_that_mentions_the_item_decides() -> None:
    newest = [_event(_tool(3, _ref("ref-new")))]
    oldest = [_event(_tool(2, _ref("ref-old")))]
    history = FakeHistory(_pages([_filler(1), newest, oldest]))
    found = await _find(history)
    assert isinstance(found, msp.ToolCallItem)
    assert found.output_ref is not None
    assert found.output_ref.id == "ref-new"
    assert len(history.cursors) == 2, "older pages are not read once the item is seen"


@pytest.mark.parametrize("cursor", [None, ""], ids=["null", "empty"])
async def test_paging_stops_at_the_end_of_history(cursor: str | None) -> None:
    history = FakeHistory([msp.ViewPageResult(events=_filler(1), next_cursor=cursor)])
    assert await _find(history) is None
    assert history.cursors == [None]


async def test_paging_stops_when_the_host_repeats_a_cursor() -> None:
    page = msp.ViewPageResult(events=_filler(1), next_cursor="same")
    history = FakeHistory([page] * MAX_HISTORY_PAGES)
    assert await _find(history) is None
    assert history.cursors == [None, "same"]


async def test_a_page_longer_than_requested_is_inconsistent() -> None:
    history = FakeHistory(_pages([_filler(HISTORY_PAGE_SIZE + 1)]))
    with pytest.raises(RpcError) as raised:
        await _find(history)
    assert raised.value.code == -32603


# -- the reference itself ------------------------------------------------------------------


def _item(data: dict[str, Any]) -> msp.Item:
    return msp.ItemEventParams.model_validate(
        {"sessionId": SESSION, "viewCursor": "v:1", "item": data}
    ).item


_MESSAGE = {
    "itemId": ITEM,
    "kind": "agentMessage",
    "turnId": "turn-1",
    "revision": 2,
    "status": "completed",
    "text": "done",
}


@pytest.mark.parametrize(
    ("item", "read", "code"),
    [
        (None, _read(), -32602),
        (_item(_tool(2)), _read(), -32602),
        (_item(_tool(2, _ref("another-ref"))), _read(), -32602),
        (_item(_tool(2, _ref())), OutputRead(SESSION, ITEM, "tool-output://x"), -32602),
        (_item(_tool(2, _ref())), OutputRead(SESSION, ITEM, f"store://outputs/{REF}"), -32602),
        (_item(_MESSAGE), _read(), -32602),
        (_item(_tool(2, _ref(availability="missing"))), _read(), -32600),
        (_item(_tool(2, _ref(availability="accessFailed"))), _read(), -32600),
        (_item(_tool(2, _ref(byte_len=300))), _read(offset=301), -32602),
    ],
    ids=[
        "item not in history",
        "item without stored output",
        "another reference",
        "an arbitrary uri",
        "the reference's uri instead of its id",
        "an item that is not a tool",
        "missing bytes",
        "bytes that could not be accessed",
        "offset past the stored length",
    ],
)
def test_a_reference_that_cannot_be_read_is_refused(
    item: msp.Item | None, read: OutputRead, code: int
) -> None:
    with pytest.raises(RpcError) as raised:
        stored_reference(item, read)
    assert raised.value.code == code


def test_an_unavailable_reference_names_its_availability() -> None:
    with pytest.raises(RpcError) as raised:
        stored_reference(_item(_tool(2, _ref(availability="missing"))), _read())
    assert raised.value.data == {"availability": "missing"}


@pytest.mark.parametrize("offset", [0, 150, 300])
def test_a_reference_read_within_its_stored_length_is_accepted(offset: int) -> None:
    ref = stored_reference(_item(_tool(2, _ref(byte_len=300))), _read(offset=offset))
    assert (ref.id, ref.byte_len) == (REF, 300)


# -- page consistency ----------------------------------------------------------------------


def _page(
    content: str,
    byte_len: int,
    *,
    encoding: str = "utf8",
    offset: int = 0,
    eof: bool = False,
    media_type: str = "text/plain",
) -> msp.ItemReadOutputResult:
    return msp.ItemReadOutputResult(
        content=content,
        encoding=encoding,
        media_type=media_type,
        offset_bytes=offset,
        byte_len=byte_len,
        eof=eof,
    )


_BINARY = base64.b64encode(b"\xff\x80\x00abc").decode()


@pytest.mark.parametrize(
    ("page", "read"),
    [
        (_page("output-marker\n", 14), _read(length=14)),
        (_page("é", 2), _read(length=2)),
        (_page(_BINARY, 6, encoding="base64", offset=7), _read(offset=7, length=6)),
        (_page("", 0, eof=True, offset=300), _read(offset=300)),
        (_page("ab", 2, eof=True), _read(length=100)),
    ],
    ids=["text", "multi-byte text", "binary", "empty at the end", "short at the end"],
)
def test_a_consistent_page_passes(page: msp.ItemReadOutputResult, read: OutputRead) -> None:
    assert page_problem(page, read) is None
    check_page(page, read)


@pytest.mark.parametrize(
    ("page", "read"),
    [
        (_page("abc", 3, offset=1), _read()),
        (_page("abcd", 4), _read(length=3)),
        (_page("", 0), _read()),
        (_page("é", 1), _read()),
        (_page("abc", 2), _read()),
        (_page("\ud800", 1), _read()),
        (_page("QR==", 1, encoding="base64"), _read()),
        (_page("QQ", 1, encoding="base64"), _read()),
        (_page("QQ==\n", 1, encoding="base64"), _read()),
        (_page("QUJD", 2, encoding="base64"), _read()),
        (_page("QUJD", 3, encoding="latin1"), _read()),
        (_page("abc", 3, media_type=""), _read()),
        (_page("abc", 3, media_type="x" * 257), _read()),
        (_page("a" * 5, 5), _read(length=4)),
    ],
    ids=[
        "another offset",
        "more bytes than requested",
        "no bytes and no end",
        "text shorter than byteLen",
        "text longer than byteLen",
        "a lone surrogate",
        "non-zero trailing bits",
        "missing padding",
        "whitespace in base64",
        "base64 longer than byteLen",
        "an unknown encoding",
        "no media type",
        "an overlong media type",
        "content over the range",
    ],
)
def test_an_inconsistent_page_is_an_internal_error(
    page: msp.ItemReadOutputResult, read: OutputRead
) -> None:
    assert page_problem(page, read) is not None
    with pytest.raises(RpcError) as raised:
        check_page(page, read)
    assert raised.value.code == -32603


# -- host errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code", "data"),
    [
        (
            RpcError(-32041, "gone", {"kind": "outputUnavailable", "availability": "missing"}),
            -32600,
            {"availability": "missing"},
        ),
        (RpcError(-32041, "gone", {"kind": "outputUnavailable"}), -32600, None),
        (
            RpcError(-32602, "inside", {"kind": "invalidParams", "alignedNextOffset": 12}),
            -32602,
            {"alignedNextOffset": 12},
        ),
        (RpcError(-32602, "past the end", {"kind": "invalidParams"}), -32602, None),
        (RpcError(-32601, "method not found", {"kind": "methodNotFound"}), -32600, None),
        (RpcError(-32020, "no session", {"kind": "sessionNotFound"}), -32600, None),
        (RpcError(-32603, "invalid result for item/readOutput"), -32603, None),
    ],
    ids=[
        "unavailable with its availability",
        "unavailable",
        "offset inside a character",
        "another bad range",
        "a host without the method",
        "a session the host does not know",
        "a result that does not validate",
    ],
)
def test_host_read_errors_map_to_the_callers_codes(
    error: RpcError, code: int, data: object
) -> None:
    mapped = host_read_error(error, _read(offset=11))
    assert (mapped.code, mapped.data) == (code, data)


def test_other_host_failures_are_reading_failures_that_submitted_nothing() -> None:
    error = RpcError(-32001, "overloaded", {"kind": "overloaded", "retryable": True})
    mapped = host_read_error(error, _read())
    assert mapped.code == -32603
    assert isinstance(mapped.data, dict)
    assert mapped.data["failure"] == {
        "kind": "hostRejected",
        "source": "host",
        "retryable": False,
        "phase": "reading",
        "execution": "notSubmitted",
    }


# -- the answer ----------------------------------------------------------------------------

_HOST_PAGE = (
    b'{"jsonrpc":"2.0","id":9,"result":{"offsetBytes":0,"byteLen":9,"eof":true,'
    b'"content":"caf\\u00e9 \\/\\n\\u0041","mediaType":"text/plain","encoding":"utf8"}}'
)


def test_the_answer_carries_the_content_as_muse_wrote_it() -> None:
    message = decode_frame(_HOST_PAGE)
    assert isinstance(message, dict)
    page = msp.ItemReadOutputResult.model_validate(message["result"], by_alias=True)
    read = _read(length=100)
    check_page(page, read)
    token = result_string_token(_HOST_PAGE, message["result"], "content")
    assert token == b'"caf\\u00e9 \\/\\n\\u0041"'
    spliced = page_response(read, page, token)
    assert isinstance(spliced, RawJson)
    assert token in spliced.data  # not decoded and written again in our own spelling
    encoded = page_response(read, page)
    assert not isinstance(encoded, RawJson)
    assert b"\\u0041" not in encode_value(encoded)
    # Either way the client reads the same answer.
    assert acp.MuseReadOutputResponse.model_validate_json(spliced.data) == encoded


# -- admission -----------------------------------------------------------------------------


def _context(tmp_path: Path, *, output: bool) -> AgentContext:
    ctx = AgentContext(AdapterConfig(muse_bin=str(tmp_path / "no-muse"), data_dir=tmp_path))
    ctx.negotiated = Negotiated(output=output)
    return ctx


def _request(session_id: str = SESSION) -> acp.MuseReadOutputRequest:
    return acp.MuseReadOutputRequest(session_id=session_id, item_id=ITEM, output_ref=REF)


async def _handle(ctx: AgentContext, request: acp.MuseReadOutputRequest) -> RpcError:
    with anyio.fail_after(WAIT), pytest.raises(RpcError) as raised:
        await handle_read_output(ctx, request, RequestContext(1, "_muse/readOutput"))
    return raised.value


async def test_a_read_without_negotiation_is_an_invalid_request(tmp_path: Path) -> None:
    ctx = _context(tmp_path, output=False)
    add_session(ctx, SESSION, str(tmp_path))
    assert (await _handle(ctx, _request())).code == -32600


async def test_a_read_on_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    ctx = _context(tmp_path, output=True)
    assert (await _handle(ctx, _request("unknown"))).code == -32002


async def test_a_read_on_a_closed_session_is_not_found(tmp_path: Path) -> None:
    ctx = _context(tmp_path, output=True)
    session = add_session(ctx, SESSION, str(tmp_path))
    session.closed = True
    assert (await _handle(ctx, _request())).code == -32002


def test_read_defaults_apply_when_the_client_leaves_them_out() -> None:
    read = OutputRead.of(_request())
    assert (read.offset_bytes, read.length_bytes) == (0, 65536)
