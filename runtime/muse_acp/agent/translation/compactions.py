"""Compactions of a session's history, as ACP shows them to a client that opted in.

Contract: ``compaction_updates`` gives the updates for one state of a Muse ``compaction`` item,
the item id naming the compaction: in progress, ``compaction_update`` ``in_progress``; ended,
the summary as one ``compaction_summary_chunk`` (Muse sends no summary text, so it says in
muse-acp's words what Muse did: the token counts before and after when Muse gave them, or that
there was nothing to compact) then ``compaction_update`` with the final status: ``completed``
(compacted, or nothing to compact), ``cancelled``, or ``failed`` with Muse's reason, redacted
by the caller's ``reason`` and bounded. ``nothing_to_compact`` and ``compaction_failed`` are the
same for a ``session/compact`` Muse answered ``noop`` or refused, before any item existed.
These updates go only to a client with ``session.compaction`` (``sessions.outlet``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Final

from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "NOOP_REASONS",
    "REASON_LIMIT",
    "Compaction",
    "compaction_failed",
    "compaction_started",
    "compaction_updates",
    "ended_as",
    "nothing_to_compact",
]

REASON_LIMIT: Final = 300
NOOP_REASONS: Final = MappingProxyType(
    {"no_compactable_history": "there is no history to compact yet"}
)
"""Muse's reasons for having nothing to compact, in words."""
Compaction = acp.CompactionUpdateSessionUpdate | acp.CompactionSummaryChunkSessionUpdate
"""The updates that show a compaction."""


def _plain(text: str) -> str:
    return clip(" ".join(text.split()), REASON_LIMIT)


def ended_as(item: msp.CompactionItem) -> str | None:
    """Why ``item`` ended other than compacted or with nothing to compact (None: it did not)."""
    if item.status == "completed" and item.outcome in (None, "compacted", "noop"):
        return None
    return _plain(str(item.reason or item.outcome or item.status))


def compaction_updates(
    item: msp.CompactionItem, reason: Callable[[str], str] = _plain
) -> list[Compaction]:
    """The updates for ``item`` as it is now (see the module contract)."""
    if item.status == "inProgress":
        return compaction_started(item.item_id)
    why = ended_as(item)
    if why is not None:
        if "cancelled" in (item.status, item.outcome):
            return [_status(item.item_id, "cancelled", error=reason(why))]
        return compaction_failed(item.item_id, reason(why))
    if item.outcome == "noop":
        why = item.reason or "it gave no reason"
        return nothing_to_compact(item.item_id, f"Muse says {NOOP_REASONS.get(why, reason(why))}")
    text = "Muse summarised this session's earlier history."
    if item.tokens_before is not None and item.tokens_after is not None:
        text += f" Context went from {item.tokens_before:,} to {item.tokens_after:,} tokens."
    return [_summary(item.item_id, text), _status(item.item_id, "completed")]


def compaction_started(compaction_id: str) -> list[Compaction]:
    """A compaction under way."""
    return [_status(compaction_id, "in_progress")]


def nothing_to_compact(compaction_id: str, why: str) -> list[Compaction]:
    """A compaction that found nothing to compact, for ``why``."""
    return [
        _summary(compaction_id, f"Nothing was compacted: {why}."),
        _status(compaction_id, "completed"),
    ]


def compaction_failed(compaction_id: str, why: str) -> list[Compaction]:
    """A compaction that failed, for ``why``."""
    return [_status(compaction_id, "failed", error=f"Compaction failed: {why}")]


def _status(
    compaction_id: str, status: acp.CompactionStatus, *, error: str | None = None
) -> acp.CompactionUpdateSessionUpdate:
    update = acp.CompactionUpdateSessionUpdate(
        session_update="compaction_update", compaction_id=compaction_id, status=status
    )
    if error is not None:
        update.error = error  # assigned only when known: an unset member stays out of the dump
    return update


def _summary(compaction_id: str, text: str) -> acp.CompactionSummaryChunkSessionUpdate:
    return acp.CompactionSummaryChunkSessionUpdate(
        session_update="compaction_summary_chunk",
        compaction_id=compaction_id,
        content=acp.TextContentBlock(type="text", text=text),
    )
