"""Titles of the cards of delegated work: workflows and subagents.

Contract (pure): ``delegated_title`` titles a ``subagent`` card from its objective (else its
role, else its agent path) and a ``workflow`` card from its first message (else its first
child's label, else its script id), as ``Subagent: …`` or ``Workflow: …``, only the first line
of the text, with blanks collapsed; None for any other item, or when the item names nothing
(the caller then falls back to the item's kind and status). Only public item members are used;
the caller bounds the length.
"""

from __future__ import annotations

from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["delegated_title"]


def _first_line(text: str | None) -> str | None:
    if text is None:
        return None
    line = next((part for part in text.splitlines() if part.strip()), "")
    shown = " ".join(line.split())
    return shown or None


def delegated_title(item: WireModel) -> str | None:
    """``Subagent: OBJECTIVE`` or ``Workflow: MESSAGE`` (see the module contract)."""
    if isinstance(item, msp.SubagentItem):
        named = next(
            filter(None, map(_first_line, (item.objective, item.role, item.agent_path))), None
        )
        return None if named is None else f"Subagent: {named}"
    if isinstance(item, msp.WorkflowItem):
        first_child = item.children[0].label if item.children else None
        named = next(
            filter(None, map(_first_line, (item.message, first_child, item.script_id))), None
        )
        return None if named is None else f"Workflow: {named}"
    return None
