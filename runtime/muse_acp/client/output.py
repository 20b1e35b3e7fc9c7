"""Stored tool output (the Muse ``muse/output`` extension): references, pages and bytes.

Contract: an ``OutputRef`` names one stored output (session, item, output id, and its size when
the card announced it); ``OutputRef.of`` accepts a reference, a card's ``_meta["muse/output"]``
or the card. ``read_pages`` reads an output from offset 0 in pages of at most ``page_bytes``
(or the agent's advertised maximum), advancing by each page's ``byteLen`` until ``eof``, with at
most one more request in flight while a page travels (withdrawn when the guess is wrong).
``decode_page`` turns a page back into bytes and checks their count against ``byteLen``.

Errors: a page that starts elsewhere than asked, whose content is not ``byteLen`` bytes, that
makes no progress without ``eof`` or runs past the announced size is refused with an
INTERNAL_ERROR, so a confused agent can neither corrupt the bytes nor keep a reader looping.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, Self

from pydantic import ValidationError

from muse_acp.rpc import RpcError, describe_validation_error
from muse_acp_wire import acp

__all__ = [
    "MAX_PAGE_BYTES",
    "OUTPUT_META_KEY",
    "OutputRef",
    "PendingPage",
    "StartRead",
    "decode_page",
    "output_ref",
    "read_pages",
]

OUTPUT_META_KEY: Final = acp.MuseToolCallMeta.model_fields["muse_output"].alias or ""
MAX_PAGE_BYTES: Final = 1048576
"""The most a single ``_muse/readOutput`` may ask for."""


class PendingPage(Protocol):
    """One ``_muse/readOutput`` request in flight (``AgentConnection.start_request`` makes it)."""

    async def result(self) -> acp.MuseReadOutputResponse:
        """The page, once it arrives."""
        ...

    async def withdraw(self) -> None:
        """Give the page up."""
        ...


StartRead = Callable[[acp.MuseReadOutputRequest], Awaitable[PendingPage]]
"""Sends one ``_muse/readOutput`` request and returns it in flight."""


@dataclass(frozen=True, slots=True)
class OutputRef:
    """One stored output, as a tool card announced it."""

    session_id: str
    item_id: str
    output_ref: str
    byte_len: int | None = None
    """Total size in bytes, when known."""

    @classmethod
    def of(cls, ref: OutputRef | Mapping[str, Any] | acp.SessionUpdate) -> Self:
        """Read a reference from an ``OutputRef``, a card's ``muse/output`` entry, or a card.

        Raises:
            ValueError: ``ref`` does not name a stored output.
        """
        if isinstance(ref, OutputRef):
            return cls(ref.session_id, ref.item_id, ref.output_ref, ref.byte_len)
        try:
            if isinstance(ref, Mapping):
                # A caller's own mapping needs only what a read names; a card's entry has more.
                read = acp.MuseReadOutputRequest.model_validate(
                    {key: ref.get(key) for key in ("sessionId", "itemId", "outputRef")},
                    by_alias=True,
                    by_name=False,
                )
                size = ref.get("byteLen")
                byte_len = size if isinstance(size, int) and not isinstance(size, bool) else None
                return cls(read.session_id, read.item_id, read.output_ref, byte_len)
            else:
                meta = acp.MuseToolCallMeta.model_validate(
                    ref.field_meta or {}, by_alias=True, by_name=False
                )
                if meta.muse_output is None:
                    raise ValueError("this update carries no stored output reference")
                entry = meta.muse_output
        except ValidationError as error:
            detail = describe_validation_error(error)
            raise ValueError(f"not a stored output reference ({detail})") from None
        return cls(entry.session_id, entry.item_id, entry.output_ref, entry.byte_len)


def output_ref(update: acp.SessionUpdate) -> OutputRef | None:
    """The stored output a tool card announces, or None."""
    if not isinstance(update, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate):
        return None
    try:
        return OutputRef.of(update)
    except ValueError:
        return None


def decode_page(page: acp.MuseReadOutputResponse) -> bytes:
    """The bytes a page carries.

    Raises:
        RpcError: the content does not decode, or decodes to other than ``byteLen`` bytes.
    """
    if page.encoding == "utf8":
        data = page.content.encode("utf-8")
    else:
        try:
            data = base64.b64decode(page.content, validate=True)
        except (binascii.Error, ValueError):
            message = "the agent sent a stored output page that is not base64"
            raise RpcError.internal_error(message) from None
    if len(data) != page.byte_len:
        raise RpcError.internal_error(
            f"the agent sent a stored output page of {len(data)} bytes announced as {page.byte_len}"
        )
    return data


def _check_page(ref: OutputRef, page: acp.MuseReadOutputResponse, offset: int, length: int) -> None:
    if page.offset_bytes != offset:
        raise RpcError.internal_error(
            f"the agent answered a read at offset {offset} with a page at {page.offset_bytes}"
        )
    if page.byte_len > length:
        raise RpcError.internal_error(
            f"the agent sent {page.byte_len} bytes when at most {length} were asked for"
        )
    if page.byte_len == 0 and not page.eof:
        raise RpcError.internal_error("the agent sent an empty stored output page before the end")
    if ref.byte_len is not None and offset + page.byte_len > ref.byte_len:
        raise RpcError.internal_error(
            f"the agent sent stored output beyond its announced {ref.byte_len} bytes"
        )
    # The next offset is computed from byteLen, so it must be the size of what was sent.
    if page.encoding != "utf8" or not page.content.isascii() or len(page.content) != page.byte_len:
        decode_page(page)  # ASCII text is one byte a character: nothing else to count


async def read_pages(
    start: StartRead, ref: OutputRef, *, page_bytes: int = MAX_PAGE_BYTES
) -> AsyncIterator[acp.MuseReadOutputResponse]:
    """Yield the pages of ``ref`` in order, from offset 0 until a page says ``eof``.

    Raises:
        ValueError: ``page_bytes`` is outside 1..1 MiB.
        RpcError: the agent refused a read or sent an inconsistent page.
    """
    if not 1 <= page_bytes <= MAX_PAGE_BYTES:
        raise ValueError(f"page_bytes must be between 1 and {MAX_PAGE_BYTES}")

    def request(offset: int) -> acp.MuseReadOutputRequest:
        return acp.MuseReadOutputRequest(
            session_id=ref.session_id,
            item_id=ref.item_id,
            output_ref=ref.output_ref,
            offset_bytes=offset,
            length_bytes=page_bytes,
        )

    offset = 0
    current: PendingPage | None = await start(request(offset))
    ahead: PendingPage | None = None
    full = True  # the last page was as long as asked for (the first is expected to be)
    try:
        while current is not None:
            guess = offset + page_bytes
            if full and ahead is None and (ref.byte_len is None or guess < ref.byte_len):
                ahead = await start(request(guess))
            page = await current.result()
            current = None
            _check_page(ref, page, offset, page_bytes)
            yield page
            if page.eof:
                return
            offset += page.byte_len
            full = page.byte_len == page_bytes
            if offset == guess and ahead is not None:
                current, ahead = ahead, None
            else:
                if ahead is not None:
                    await ahead.withdraw()
                    ahead = None
                current = await start(request(offset))
    finally:
        # Stopped early, by an error or by the caller: nothing is left outstanding.
        for pending in (current, ahead):
            if pending is not None:
                await pending.withdraw()
