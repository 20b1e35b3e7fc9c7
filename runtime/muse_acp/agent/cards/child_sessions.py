"""Delegated work's children as ACP child sessions: their ids and what each one shows.

Contract (pure): every Muse subagent and every child of a workflow is one ACP child session,
owned by the session whose turn started it. Its id is derived from Muse's own ids, so it needs
no record and means the same after a restart: ``PARENT~subagent~SUBAGENT_ID`` or
``PARENT~workflow~RUN_ID~CHILD_ID``, the Muse ids percent-encoded (``~`` never occurs in a
session id muse-acp accepts, so a child id is told apart from any other). ``parse_child_id``
reads one back (None for any other id). ``children_of`` gives the current ``ChildView`` of each
child an item shows, from public item members only; ``child_state`` is its ACP work state;
``children_meta`` is the link a parent's card carries (``_meta["muse/children"]``), and
``workflow_text`` the card text of a workflow (its message, then one line per child with its
status, attempt and failure), which every client sees.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias
from urllib.parse import quote, unquote

from muse_acp.host.features import HostFeatures
from muse_acp.host.versions import Feature
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "CHILDREN_META",
    "STOPPED_BY",
    "ChildKind",
    "ChildRef",
    "ChildView",
    "child_session_id",
    "child_state",
    "children_meta",
    "children_of",
    "parse_child_id",
    "stoppable_kinds",
    "workflow_text",
]

CHILDREN_META: Final = "muse/children"
"""The ``_meta`` key of a parent's card that lists the child sessions it shows."""
CHILD_ID_LIMIT: Final = 512
"""Longest child session id read back; longer ones are no child of ours."""

_MARK: Final = "~"
_PARENT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_TITLE_CHARS: Final = 256
_WORKING: Final = frozenset({"running", "inProgress", "started", "starting"})
"""Statuses of a child still at work (Muse's open set; anything else ended it)."""
_MAX_LISTED: Final = 64
"""Children listed on one card (a workflow may fan out widely; the rest stay loadable)."""

ChildKind: TypeAlias = Literal["subagent", "workflow"]
StateUpdate: TypeAlias = acp.RunningStateUpdate | acp.IdleStateUpdate

STOPPED_BY: Final[Mapping[ChildKind, Feature]] = MappingProxyType(
    {
        "workflow": "workflowChildren",  # workflow/childControl, action skip
        "subagent": "subagentStop",  # subagent/stop
    }
)
"""The feature a host needs to stop one child of each kind on its own."""


def stoppable_kinds(features: HostFeatures) -> frozenset[ChildKind]:
    """The kinds of child a host with ``features`` stops on its own."""
    return frozenset(kind for kind, feature in STOPPED_BY.items() if features.has(feature))


def _encode(part: str) -> str:
    return quote(part, safe="").replace(_MARK, "%7E")


@dataclass(frozen=True, slots=True)
class ChildRef:
    """What a child session id names: its parent session and Muse's ids of the child."""

    parent_id: str
    kind: ChildKind
    key: str
    """The subagent id, or the workflow child's ``childId``."""
    run_id: str | None = None
    """The workflow's ``workflowRunId`` (None for a subagent)."""

    @property
    def session_id(self) -> str:
        return child_session_id(self.parent_id, self.kind, self.key, self.run_id)


def child_session_id(parent_id: str, kind: ChildKind, key: str, run_id: str | None = None) -> str:
    """The child session id of a subagent (``key``) or workflow child (``run_id``, ``key``)."""
    parts = [parent_id, kind, *([_encode(run_id)] if run_id is not None else []), _encode(key)]
    return _MARK.join(parts)


def parse_child_id(session_id: str) -> ChildRef | None:
    """The child a child session id names, or None for any other id."""
    if _MARK not in session_id or len(session_id) > CHILD_ID_LIMIT:
        return None
    parts = session_id.split(_MARK)
    parent, kind, keys = parts[0], parts[1], [unquote(p) for p in parts[2:]]
    if not _PARENT.fullmatch(parent) or not all(keys):
        return None
    if kind == "subagent" and len(keys) == 1:
        return ChildRef(parent, "subagent", keys[0])
    if kind == "workflow" and len(keys) == 2:
        return ChildRef(parent, "workflow", keys[1], keys[0])
    return None


@dataclass(frozen=True, slots=True)
class ChildView:
    """One child as an item shows it now."""

    ref: ChildRef
    title: str
    """What the child was asked: a subagent's objective, a workflow child's label."""
    description: str | None
    status: str
    """Muse's status: ``running``/``inProgress`` while it works, else how it ended."""
    attempt: int = 1
    failure: str | None = None
    output: str | None = None
    """What the child handed back (a subagent's result), when it did."""
    muse_session_id: str | None = None
    """A subagent's own Muse session (``childSessionId``), once it has one."""

    @property
    def running(self) -> bool:
        return self.status in _WORKING


def children_of(parent_id: str, item: msp.Item) -> list[ChildView]:
    """The children ``item`` shows: a subagent itself, or a workflow's children."""
    if isinstance(item, msp.SubagentItem):
        result = item.result
        return [
            ChildView(
                ChildRef(parent_id, "subagent", item.subagent_id),
                clip(item.objective.strip() or item.agent_path, _TITLE_CHARS),
                item.role or item.agent_path,
                item.status,
                failure=result.error_kind if result else None,
                output=(result.text or result.summary) if result else None,
                muse_session_id=item.child_session_id or None,
            )
        ]
    if isinstance(item, msp.WorkflowItem):
        return [
            ChildView(
                ChildRef(parent_id, "workflow", child.child_id, item.workflow_run_id),
                clip(child.label or child.child_id, _TITLE_CHARS),
                child.phase,
                _child_status(item, child),
                child.attempt,
                child.failure_kind,
            )
            for child in item.children[:_MAX_LISTED]
        ]
    return []


def _child_status(item: msp.WorkflowItem, child: msp.WorkflowChild) -> str:
    # A run that ended leaves no child working, whatever the child last said.
    if item.status != "inProgress" and not child.terminal and child.status in _WORKING:
        return item.status
    return child.status


def child_state(child: ChildView) -> StateUpdate:
    """The child's ACP work state: running, or idle with why its work stopped."""
    if child.running:
        return acp.RunningStateUpdate(state="running")
    if child.status == "completed":
        reason = "end_turn"
    elif child.status in ("cancelled", "skipped"):
        reason = "cancelled"
    else:
        reason = "error"
    return acp.IdleStateUpdate(state="idle", stop_reason=reason)


def children_meta(children: list[ChildView]) -> list[JsonValue]:
    """The card's link to its child sessions (``_meta["muse/children"]``)."""
    return [{"sessionId": c.ref.session_id, "title": c.title, "status": c.status} for c in children]


def workflow_text(item: msp.WorkflowItem) -> str | None:
    """A workflow card's text: its message, then each child's status (see the contract)."""
    lines = [line for line in (item.message or item.fallback_text,) if line]
    for child in item.children[:_MAX_LISTED]:
        line = (
            f"- {clip(child.label or child.child_id, _TITLE_CHARS)}: {_child_status(item, child)}"
        )
        if child.attempt > 1:
            line += f" (attempt {child.attempt})"
        if child.failure_kind:
            line += f", {child.failure_kind}"
        lines.append(line)
    return "\n".join(lines) or None
