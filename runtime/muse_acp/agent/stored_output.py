"""Stored tool output: ``_muse/readOutput`` serves the full bytes Muse 1.2.1 kept for a tool.

Contract: a read is served only when ``initialize`` negotiated ``muse/output`` (the client opted
in and the host is a verified 1.2.1) and the session is open here. Each read proves the
association it names first, on the session's lease-free read host (``read_hosts``: kept for a
short while so that paging through an output does not start a process per page; startup budget,
then read budget): ``session/read`` must report the session in its workspace, and the latest
revision of the item, looked for in at most ``MAX_HISTORY_PAGES`` backward ``view/page`` pages
of ``HISTORY_PAGE_SIZE`` events, must carry exactly the requested reference; one beyond that
budget is "not found", never guessed. The search is skipped when the same host found the item's
latest revision at the very view cursor ``session/read`` reports now: nothing was added to the
history since, so it would find the same revision (see ``read_hosts``); every read still checks
the session, its workspace and that cursor, and the reference, availability and offset against
the revision. Then one ``item/readOutput`` goes to the same host, never retried. A read takes no
lease, changes no setting and sends no turn.

Errors: INVALID_PARAMS for what the caller got wrong (a reference, item and session that do not
belong together, an offset past the stored bytes, or one inside a UTF-8 character, with the
host's ``alignedNextOffset`` kept in ``data``); INVALID_REQUEST for what is unavailable (not
negotiated, a host without stored output, a session Muse never ran, bytes that are not
``available``); INTERNAL_ERROR for host pages that do not add up, and for host failures.

The page goes back as Muse sent it, once ``check_page`` found it consistent with the request:
``utf8`` text or ``base64`` bytes, never re-decoded, and no replacement bytes are made up.
"""

from __future__ import annotations

import binascii
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

from pydantic import ValidationError

from muse_acp.agent import failures
from muse_acp.agent.read_hosts import reading_output
from muse_acp.host.client import MspHost
from muse_acp.host.versions import supports
from muse_acp.msp_types import Item, msp
from muse_acp.redact import clip, redact
from muse_acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    RequestContext,
    RpcError,
)
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

__all__ = [
    "HISTORY_PAGE_SIZE",
    "MAX_HISTORY_PAGES",
    "OutputRead",
    "PageFetcher",
    "check_page",
    "find_latest_item",
    "handle_read_output",
    "host_read_error",
    "latest_revision",
    "page_problem",
    "stored_reference",
]

HISTORY_PAGE_SIZE: Final = 100
MAX_HISTORY_PAGES: Final = 20
"""References are looked for in the latest 2,000 durable events at most."""
DEFAULT_LENGTH_BYTES: Final = 65536
SESSION_NOT_FOUND: Final = -32020
OUTPUT_UNAVAILABLE: Final = -32041
MEDIA_TYPE_LIMIT: Final = 256
_QUOTE_LIMIT: Final = 80
_ITEM_EVENTS: Final = frozenset({"item/started", "item/updated", "item/completed"})

PageFetcher: TypeAlias = Callable[[str | None], Awaitable[msp.ViewPageResult]]
"""Fetches one backward history page after a cursor (None: the newest page)."""


@dataclass(frozen=True, slots=True)
class OutputRead:
    """One requested byte range of one stored output, with the request's defaults applied."""

    session_id: str
    item_id: str
    output_ref: str
    offset_bytes: int = 0
    length_bytes: int = DEFAULT_LENGTH_BYTES

    @classmethod
    def of(cls, params: acp.MuseReadOutputRequest) -> OutputRead:
        return cls(
            params.session_id,
            params.item_id,
            params.output_ref,
            0 if params.offset_bytes is None else params.offset_bytes,
            DEFAULT_LENGTH_BYTES if params.length_bytes is None else params.length_bytes,
        )


def _quote(text: str) -> str:
    return repr(clip(text, _QUOTE_LIMIT))


def _inconsistent(what: str, why: str) -> RpcError:
    return RpcError(
        INTERNAL_ERROR,
        f"Muse returned an inconsistent {what}: {why}. Nothing was changed and no turn was "
        "started; read again, and if this persists check the Muse host version",
    )


# -- the reference: latest revision of an item in bounded history --------------------------


def latest_revision(events: Sequence[msp.ViewEvent], session_id: str, item_id: str) -> Item | None:
    """The highest revision of ``item_id`` among ``events`` (in the ascending order Muse pages
    them), the newest event winning a tie; events of other sessions do not count.

    Raises:
        RpcError: INTERNAL_ERROR when an event about this item cannot be read, since skipping
            it could hand back an older revision than the latest.
    """
    latest: Item | None = None
    for event in reversed(events):
        raw = event.params
        item = raw.get("item")
        if (
            event.method not in _ITEM_EVENTS
            or raw.get("sessionId") != session_id
            or not isinstance(item, dict)
            or item.get("itemId") != item_id
        ):
            continue
        try:
            params = msp.ItemEventParams.model_validate(raw, by_alias=True, by_name=False)
        except ValidationError:
            raise _inconsistent("history page", f"its {event.method} event is unreadable") from None
        if latest is None or params.item.revision > latest.revision:
            latest = params.item
    return latest


async def find_latest_item(fetch: PageFetcher, session_id: str, item_id: str) -> Item | None:
    """Page history backward, newest first, until ``item_id`` is seen, history ends, a cursor
    repeats or ``MAX_HISTORY_PAGES`` pages were read; None when it was not seen.

    The first page that mentions the item decides: it holds the item's newest events.

    Raises:
        RpcError: INTERNAL_ERROR for a page longer than requested or an unreadable item event.
    """
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_HISTORY_PAGES):
        page = await fetch(cursor)
        if len(page.events) > HISTORY_PAGE_SIZE:
            raise _inconsistent(
                "history page", f"it holds {len(page.events)} events, over the requested limit"
            )
        found = latest_revision(page.events, session_id, item_id)
        if found is not None:
            return found
        if not page.next_cursor or page.next_cursor in seen:
            return None
        seen.add(page.next_cursor)
        cursor = page.next_cursor
    return None


def stored_reference(item: Item | None, read: OutputRead) -> msp.OutputRef:
    """The item's stored output reference, if it is the one ``read`` names and may be read.

    Raises:
        RpcError: INVALID_PARAMS when the item was not found or carries another (or no)
            reference, or when the offset is past the stored bytes; INVALID_REQUEST when the
            stored bytes are not available.
    """
    ref = item.output_ref if isinstance(item, msp.ToolCallItem | msp.UserShellItem) else None
    if ref is None or ref.id != read.output_ref:
        raise RpcError(
            INVALID_PARAMS,
            f"no stored output {_quote(read.output_ref)} of item {_quote(read.item_id)} was found "
            f"in the latest {MAX_HISTORY_PAGES * HISTORY_PAGE_SIZE} history events of session "
            f"{_quote(read.session_id)}; send the sessionId, itemId and outputRef exactly as a "
            "tool card's muse/output entry announced them together",
        )
    if ref.availability != "available":
        availability = clip(ref.availability, _QUOTE_LIMIT)
        raise RpcError(
            INVALID_REQUEST,
            f"the stored output {_quote(ref.id)} is {availability}, so its bytes cannot be "
            "read; the tool card's text is all that remains of it",
            {"availability": availability},
        )
    if read.offset_bytes > ref.byte_len:
        raise RpcError(
            INVALID_PARAMS,
            f"offsetBytes {read.offset_bytes} is past the end of the stored output, which holds "
            f"{ref.byte_len} bytes; read from an offset between 0 and {ref.byte_len}",
            {"byteLen": ref.byte_len},
        )
    return ref


# -- the page: consistency with the request ----------------------------------------------


def _canonical_base64(content: str) -> bytes | None:
    try:
        raw = binascii.a2b_base64(content.encode("ascii"), strict_mode=True)
    except (UnicodeEncodeError, binascii.Error):
        return None
    return raw if binascii.b2a_base64(raw, newline=False).decode("ascii") == content else None


def _content_size(page: msp.ItemReadOutputResult, length: int) -> int | str:
    """The byte count ``content`` carries, or why it cannot be counted; never decodes more
    than a page of ``length`` bytes could hold."""
    content = page.content
    if page.encoding == "base64":
        if len(content) > 4 * -(-length // 3):
            return "its base64 content is longer than the requested range"
        raw = _canonical_base64(content)
        return "its content is not canonical base64" if raw is None else len(raw)
    if len(content) > length:
        return "its text content is longer than the requested range"
    try:
        return len(content.encode("utf-8"))
    except UnicodeEncodeError:
        return "its utf8 content is not valid Unicode text"


def page_problem(page: msp.ItemReadOutputResult, read: OutputRead) -> str | None:
    """Why ``page`` does not answer ``read`` consistently, or None when it does."""
    if page.encoding not in ("utf8", "base64"):
        return f"its encoding {_quote(page.encoding)} is neither utf8 nor base64"
    if not 1 <= len(page.media_type) <= MEDIA_TYPE_LIMIT:
        return "its mediaType is empty or too long"
    if page.offset_bytes != read.offset_bytes:
        return f"it starts at byte {page.offset_bytes}, not at the requested {read.offset_bytes}"
    if page.byte_len > read.length_bytes:
        return f"it holds {page.byte_len} bytes, more than the {read.length_bytes} requested"
    if page.byte_len == 0 and not page.eof:
        return "it holds no bytes yet does not reach the end of the output"
    size = _content_size(page, read.length_bytes)
    if isinstance(size, str):
        return size
    if size != page.byte_len:
        return f"its content decodes to {size} bytes, not the {page.byte_len} of byteLen"
    return None


def check_page(page: msp.ItemReadOutputResult, read: OutputRead) -> None:
    """Raise INTERNAL_ERROR unless ``page`` answers ``read`` consistently (``page_problem``)."""
    problem = page_problem(page, read)
    if problem is not None:
        raise _inconsistent("stored-output page", problem)


# -- host errors ----------------------------------------------------------------------------


def host_read_error(error: RpcError, read: OutputRead) -> RpcError:
    """The ACP error for a failed ``item/readOutput`` (the host error, or an unusable result)."""
    data = error.data if isinstance(error.data, dict) else {}
    if error.code == OUTPUT_UNAVAILABLE or data.get("kind") == "outputUnavailable":
        availability = data.get("availability")
        state = clip(availability, _QUOTE_LIMIT) if isinstance(availability, str) else None
        return RpcError(
            INVALID_REQUEST,
            f"Muse reports the stored output {_quote(read.output_ref)} as "
            f"{state or 'unavailable'}, so its bytes cannot be read; the tool card's text is all "
            "that remains of it",
            None if state is None else {"availability": state},
        )
    if error.code == INVALID_PARAMS:
        aligned = data.get("alignedNextOffset")
        if isinstance(aligned, int) and not isinstance(aligned, bool):
            return RpcError(
                INVALID_PARAMS,
                f"offsetBytes {read.offset_bytes} falls inside a UTF-8 character of the stored "
                f"text; read again from offsetBytes {aligned}",
                {"alignedNextOffset": aligned},
            )
        return RpcError(
            INVALID_PARAMS,
            f"Muse refused the byte range: {redact(error.message, limit=_QUOTE_LIMIT * 4)}; "
            "read a range within the stored output's byteLen",
        )
    if error.code == METHOD_NOT_FOUND:
        return _unsupported_host()
    if error.code == SESSION_NOT_FOUND:
        return _never_ran()
    if error.code == INTERNAL_ERROR and error.data is None:
        # The runtime's own rejection of a result that does not match the MSP schema.
        return _inconsistent("stored-output page", "it does not match the MSP schema")
    return failures.host_rejected("item/readOutput", error.code, error.message, phase="reading")


def _never_ran() -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        "Muse has no record of this session yet: it has not run a prompt, so it has no stored "
        "output to read",
    )


def _unsupported_host() -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        "this Muse host cannot serve stored output; stored output reads need a verified "
        "Muse 1.2.1 host",
    )


# -- the handler ----------------------------------------------------------------------------

_R = TypeVar("_R", bound=WireModel)


async def _ask(
    host: MspHost,
    method: str,
    params: WireModel,
    result_type: type[_R],
    refusal: Callable[[RpcError], RpcError | None] = lambda _: None,
) -> _R:
    """``host.call``, with a host error turned into ``refusal``'s error or a reading failure."""
    try:
        return await host.call(method, params, result_type)
    except ConnectionClosed:
        raise  # ``reading_output`` reports the host's exit
    except RpcError as error:
        mapped = refusal(error)
        raise mapped or failures.host_rejected(
            method, error.code, error.message, phase="reading"
        ) from None


def _same_directory(left: str | None, right: str) -> bool:
    return left is not None and os.path.realpath(left) == os.path.realpath(right)


async def _check_session(host: MspHost, session: AcpSession) -> str:
    """Check the session is Muse's and in its workspace; return its current view cursor."""
    params = msp.SessionReadParams(session_id=session.session_id, exclude_items=True)
    result = await _ask(
        host,
        "session/read",
        params,
        msp.SessionHistoryResult,
        lambda error: _never_ran() if error.code == SESSION_NOT_FOUND else None,
    )
    if result.session.session_id != session.session_id:
        raise _inconsistent("session", "session/read answered for another session")
    if not _same_directory(result.session.workspace_root, session.cwd):
        raise RpcError(
            INVALID_REQUEST,
            f"Muse records session {session.session_id} under another workspace than "
            f"{session.cwd}; open the session from its own workspace to read its output",
        )
    return result.view_cursor


async def _history_page(host: MspHost, session_id: str, cursor: str | None) -> msp.ViewPageResult:
    params = msp.ViewPageParams(
        session_id=session_id, limit=HISTORY_PAGE_SIZE, cursor=cursor, direction="backward"
    )
    return await _ask(host, "view/page", params, msp.ViewPageResult)


async def handle_read_output(
    ctx: AgentContext, params: acp.MuseReadOutputRequest, _: RequestContext
) -> acp.MuseReadOutputResponse:
    if not ctx.negotiated.output:
        raise RpcError(
            INVALID_REQUEST,
            "stored output reads were not negotiated on this connection: opt in with "
            'clientCapabilities._meta["muse/output"] = 1 at initialize, with a Muse 1.2.1 host',
        )
    session = ctx.sessions.require(params.session_id)
    read = OutputRead.of(params)
    async with reading_output(ctx, session) as kept:
        host = kept.host
        if not supports("storedOutput", host.version):
            raise _unsupported_host()
        view_cursor = await _check_session(host, session)
        item = kept.proven(read.item_id, view_cursor)
        if item is None:
            item = await find_latest_item(
                partial(_history_page, host, read.session_id), read.session_id, read.item_id
            )
            if item is not None:
                kept.prove(read.item_id, view_cursor, item)
        stored_reference(item, read)
        request = msp.ItemReadOutputParams(**asdict(read))
        refusal = partial(host_read_error, read=read)
        page = await _ask(host, "item/readOutput", request, msp.ItemReadOutputResult, refusal)
    check_page(page, read)
    # A close while the read ran wins: the client must load the session again.
    ctx.sessions.require(read.session_id)
    # The page's members pass as they are; check_page vouched for each of them.
    return acp.MuseReadOutputResponse(
        session_id=read.session_id,
        item_id=read.item_id,
        output_ref=read.output_ref,
        **page.model_dump(by_alias=False),
    )
