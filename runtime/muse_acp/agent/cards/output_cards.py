"""Stored output on tool cards: the ``muse/output`` entry of a card's ``_meta``, and the note the
card's text carries about it.

Contract (pure): with ``OutputPolicy.references`` (the client negotiated ``muse/output`` and the
host is verified for stored output) and an ``outputRef`` the extension schema accepts as a
``MuseOutputReference`` (built through that generated model; its limits are the schema's), a
card's ``_meta["muse/output"]`` describes the stored output, naming the read method only when
the bytes are available. The entry's key is the schema's own (``OUTPUT_META_KEY``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from muse_acp.agent.handshake.capabilities import MAX_OUTPUT_READ
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp, msp

__all__ = [
    "BASELINE_OUTPUT",
    "OUTPUT_META_KEY",
    "STATUS_LIMIT_CHARS",
    "OutputPolicy",
    "card_meta",
    "output_reference",
    "stored_output",
    "stored_output_notes",
]

OUTPUT_META_KEY: Final = acp.MuseToolCallMeta.model_fields["muse_output"].alias or ""
"""The ``_meta`` entry that describes a stored output reference (the schema's name for it)."""
STATUS_LIMIT_CHARS: Final = 64
"""Longest host status word quoted on a card."""


@dataclass(frozen=True, slots=True)
class OutputPolicy:
    """How stored-output references appear on tool cards."""

    references: bool
    """True when the client negotiated ``muse/output`` and the host is a verified 1.2.1."""
    max_length_bytes: int = MAX_OUTPUT_READ
    """The largest read ``_muse/readOutput`` allows, advertised on cards whose output is
    available."""
    terminal: bool = False
    """The client declared the terminal convention (``clientCapabilities._meta
    .terminal_output``): shell cards show their output as a live terminal
    (``terminal_cards``)."""


BASELINE_OUTPUT: Final = OutputPolicy(references=False)
"""The policy for clients that did not negotiate stored-output references."""


def output_reference(
    session_id: str, item: msp.Item, policy: OutputPolicy
) -> acp.MuseOutputReference | None:
    """The ``muse/output`` entry for ``item``'s card, or None when the policy does not announce
    references or the item has no stored output reference the extension schema accepts (a
    media type it refuses is left out rather than losing the reference)."""
    if not policy.references:
        return None
    ref = stored_output(item)
    if ref is None:
        return None
    entry: dict[str, object] = {
        "sessionId": session_id,
        "itemId": item.item_id,
        "outputRef": ref.id,
        "byteLen": ref.byte_len,
        "availability": ref.availability,
    }
    if ref.availability == "available":
        entry["method"] = "_muse/readOutput"
        entry["maxLengthBytes"] = policy.max_length_bytes
    candidates = [{**entry, "mediaType": ref.media_type}] if ref.media_type else []
    for candidate in [*candidates, entry]:
        try:
            return acp.MuseOutputReference.model_validate(candidate, by_alias=True, by_name=False)
        except ValidationError:
            continue
    return None


def card_meta(
    meta: Mapping[str, JsonValue] | None, reference: acp.MuseOutputReference | None
) -> dict[str, Any]:
    """A card's ``_meta``: the caller's entries, and the stored output reference if any."""
    if meta is None and reference is None:
        return {}
    merged: dict[str, Any] = dict(meta or {})
    if reference is not None:
        block = acp.MuseToolCallMeta(muse_output=reference)
        merged.update(block.model_dump(mode="json", by_alias=True, exclude_none=True))
    return merged


def stored_output(item: msp.Item) -> msp.OutputRef | None:
    """The reference to the output Muse stored for ``item``, if it has one."""
    if isinstance(item, msp.ToolCallItem | msp.UserShellItem):
        return item.output_ref
    return None


def stored_output_notes(
    item: msp.Item,
    reference: acp.MuseOutputReference | None,
    policy: OutputPolicy,
    shown_all: bool = False,
) -> list[str]:
    """What a card's text says about the stored output: that it can be read back through the
    card's reference, is stored but unavailable, or, only when the client did not negotiate
    references and the card does not show all of it (``shown_all``), that the rest cannot be
    read back over this connection."""
    ref = stored_output(item)
    if ref is None:
        return []
    if not policy.references:
        if shown_all:
            return []
        return [
            f"[Muse stored the full output ({ref.byte_len} bytes), but the part not shown here "
            "cannot be read back over this connection.]"
        ]
    if reference is None:
        return []
    if ref.availability == "available":
        return [
            f"[The full output ({ref.byte_len} bytes) can be read through this card's"
            f" {OUTPUT_META_KEY} reference.]"
        ]
    availability = ref.availability[:STATUS_LIMIT_CHARS]
    return [f"[The full output ({ref.byte_len} bytes) is stored but {availability}.]"]
