"""Stored output references: finding the one a read names, and checking the host's page.

Contract (pure, no I/O): an ``OutputRead`` is one requested byte range of one stored output.
``find_latest_item`` pages a session's history backward through a ``PageFetcher`` (at most
``MAX_HISTORY_PAGES`` pages) for the item's latest revision; ``stored_reference`` accepts only
the reference that revision carries, with its bytes available and the offset within them.
``check_page`` accepts only a host page that answers the read exactly; ``page_response`` is the
ACP answer, splicing the content's token in as the host wrote it. ``host_read_error`` maps a
host's refusal. ``ProofCache`` remembers, per read host, the revision found per item with the
view cursor then reported (at most ``MAX_PROOFS``): an equal non-empty cursor proves the same.
"""

from __future__ import annotations

import binascii
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from pydantic import ValidationError

from muse_acp.agent.errors import failures
from muse_acp.host.bindings import error_kind
from muse_acp.redact import redact
from muse_acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RawJson,
    RpcError,
)
from muse_acp.text import clip, quoted
from muse_acp_wire import acp, msp

__all__ = [
    "HISTORY_PAGE_SIZE",
    "MAX_HISTORY_PAGES",
    "MAX_PROOFS",
    "OutputRead",
    "PageFetcher",
    "ProofCache",
    "check_page",
    "find_latest_item",
    "host_read_error",
    "inconsistent",
    "latest_revision",
    "never_ran",
    "page_problem",
    "page_response",
    "stored_reference",
    "unsupported_host",
]

MAX_PROOFS: Final = 256
HISTORY_PAGE_SIZE: Final = 100
MAX_HISTORY_PAGES: Final = 20
"""References are looked for in the latest 2,000 durable events at most."""
DEFAULT_LENGTH_BYTES: Final = 65536
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
    return quoted(text, _QUOTE_LIMIT)


def inconsistent(what: str, why: str) -> RpcError:
    return RpcError(
        INTERNAL_ERROR,
        f"Muse returned an inconsistent {what}: {why}. Nothing was changed and no turn was "
        "started; read again, and if this persists check the Muse host version",
    )


# -- the reference: latest revision of an item in bounded history --------------------------


def latest_revision(
    events: Sequence[msp.ViewEvent], session_id: str, item_id: str
) -> msp.Item | None:
    """The highest revision of ``item_id`` among ``events`` (in the ascending order Muse pages
    them), the newest event winning a tie; events of other sessions do not count.

    Raises:
        RpcError: INTERNAL_ERROR when an event about this item cannot be read, since skipping
            it could hand back an older revision than the latest.
    """
    latest: msp.Item | None = None
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
            raise inconsistent("history page", f"its {event.method} event is unreadable") from None
        if latest is None or params.item.revision > latest.revision:
            latest = params.item
    return latest


async def find_latest_item(fetch: PageFetcher, session_id: str, item_id: str) -> msp.Item | None:
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
            raise inconsistent(
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


def stored_reference(item: msp.Item | None, read: OutputRead) -> msp.OutputRef:
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
    if content.isascii():  # one byte a character, known without encoding a MiB of text
        return len(content)
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
        raise inconsistent("stored-output page", problem)


def page_response(
    read: OutputRead, page: msp.ItemReadOutputResult, content: bytes | None = None
) -> acp.MuseReadOutputResponse | RawJson:
    """The ACP answer carrying a checked ``page``: its members as the host gave them, and
    ``content``, the JSON token of ``page.content`` as the host wrote it, when known."""
    response = acp.MuseReadOutputResponse(
        session_id=read.session_id,
        item_id=read.item_id,
        output_ref=read.output_ref,
        **page.model_dump(by_alias=False),
    )
    if content is None:
        return response
    rest = response.__pydantic_serializer__.to_json(
        response, by_alias=True, exclude_unset=True, exclude={"content"}
    )
    return RawJson(b"".join((rest[:-1], b',"content":', content, b"}")))


# -- host errors ----------------------------------------------------------------------------


def host_read_error(error: RpcError, read: OutputRead) -> RpcError:
    """The ACP error for a failed ``item/readOutput`` (the host error, or an unusable result)."""
    data = error.data if isinstance(error.data, dict) else {}
    kind = error_kind(error)
    if kind == "outputUnavailable":
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
        return unsupported_host()
    if kind == "sessionNotFound":
        return never_ran()
    if error.code == INTERNAL_ERROR and error.data is None:
        # The runtime's own rejection of a result that does not match the MSP schema.
        return inconsistent("stored-output page", "it does not match the MSP schema")
    return failures.host_rejected("item/readOutput", error, "reading")


def never_ran() -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        "Muse has no record of this session yet: it has not run a prompt, so it has no stored "
        "output to read",
    )


def unsupported_host() -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        "this Muse host cannot serve stored output; stored output reads need a verified "
        "Muse 1.2.1 host",
    )


class ProofCache:
    """Item revisions proved on one read host, by item (see the module contract).

    ``host`` is whatever identifies the host a proof was made on; proofs made on another are
    forgotten."""

    def __init__(self) -> None:
        self._host: object = None
        self._proofs: OrderedDict[str, tuple[str, msp.Item]] = OrderedDict()

    def proven(self, host: object, item_id: str, view_cursor: str) -> msp.Item | None:
        """The item's latest revision when ``host`` found it at exactly ``view_cursor``."""
        if host is not self._host:
            return None
        proof = self._proofs.get(item_id)
        if proof is None or not view_cursor or proof[0] != view_cursor:
            return None
        return proof[1]

    def prove(self, host: object, item_id: str, view_cursor: str, item: msp.Item) -> None:
        """Remember ``item`` as the latest revision of ``item_id`` at ``view_cursor``."""
        if host is not self._host:
            self._host = host
            self._proofs.clear()
        if not view_cursor:
            return
        self._proofs[item_id] = (view_cursor, item)
        self._proofs.move_to_end(item_id)
        while len(self._proofs) > MAX_PROOFS:
            self._proofs.popitem(last=False)
