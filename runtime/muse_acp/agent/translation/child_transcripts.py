"""The transcripts of child sessions, folded from the items of delegated work.

Contract: a ``ChildTranscripts`` belongs to one ``TurnTranslator`` and is shown every revision
of a ``subagent`` or ``workflow`` item (``sighting``). It gives the ``_meta`` link for the
item's card (``child_sessions.children_meta``) and, in order, for each child that changed: a
``subagent_update`` on the parent session (announcing the child before anything is sent in its
name: title, description, work state, and ``cancel`` among its capabilities while it runs and
Muse can stop it on its own) and ``ChildUpdate``s, the child session's own transcript: what it
was asked (a user message), each change of attempt or status (an agent message), and what it
handed back (``handed_back``; left out when ``own_words``, what the child's own session said
last as read by ``child_tool_calls``, is that already). Whether any of it reaches the client is
the outlet's decision alone (``sessions.outlet``): a client without ``subagents`` sees only the
card. State is bounded (``MAX_CHILDREN`` children, the oldest forgotten first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeAlias

from muse_acp.agent.cards.child_sessions import (
    ChildKind,
    ChildView,
    child_state,
    children_meta,
    children_of,
)
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp, msp

__all__ = ["MAX_CHILDREN", "ChildTranscripts", "ChildUpdate"]

MAX_CHILDREN: Final = 1024
"""Children whose transcript one translator keeps track of."""


class ChildUpdate(NamedTuple):
    """An update of a child session's own transcript (sent with the child's session id)."""

    session_id: str
    update: acp.SessionUpdate
    muse_session_id: str | None = None
    """The subagent's own Muse session, when known (``child_tool_calls`` reads it)."""
    handed_back: bool = False
    """The line of what the child handed back (its result)."""


ParentOrChild: TypeAlias = acp.SubagentUpdateSessionUpdate | ChildUpdate


@dataclass(slots=True)
class _Sent:
    status: str
    attempt: int
    output: str | None


class ChildTranscripts:
    """What each child session was told so far (see the module contract)."""

    def __init__(self, parent_id: str, *, stoppable: frozenset[ChildKind] = frozenset()) -> None:
        self.parent_id = parent_id
        self.stoppable = stoppable
        """The kinds of child Muse stops on its own (``child_sessions.stoppable_kinds``)."""
        self._sent: dict[str, _Sent] = {}
        self.own_words: Callable[[str], str | None] = _unheard
        """The last agent message a child's own session said, by child session id, as far as
        it was read: a result that repeats it is not said again."""

    def sighting(self, item: msp.Item) -> tuple[list[JsonValue], list[ParentOrChild]]:
        """The card's link to its children, and the updates for the children that changed."""
        children = children_of(self.parent_id, item)
        updates: list[ParentOrChild] = []
        for child in children:
            updates += self._changes(child)
        return children_meta(children), updates

    def _changes(self, child: ChildView) -> list[ParentOrChild]:
        session_id = child.ref.session_id
        sent = self._sent.get(session_id)
        updates: list[ParentOrChild] = []
        if sent is None:
            while len(self._sent) >= MAX_CHILDREN:
                del self._sent[next(iter(self._sent))]
            updates.append(self._announce(child))
            updates.append(_say(child, "user", f"{session_id}#asked", child.title))
        elif (sent.status, sent.attempt) != (child.status, child.attempt):
            updates.append(self._announce(child))
        if sent is None or (sent.status, sent.attempt) != (child.status, child.attempt):
            key = f"{session_id}#{child.attempt}:{child.status}"
            updates.append(_say(child, "agent", key, _status_line(child)))
        output = child.output
        if (
            output
            and (sent is None or sent.output != output)
            and output != self.own_words(session_id)
        ):
            updates.append(_say(child, "agent", f"{session_id}#output", output, handed_back=True))
        self._sent[session_id] = _Sent(child.status, child.attempt, child.output)
        return updates

    def _announce(self, child: ChildView) -> acp.SubagentUpdateSessionUpdate:
        cancel = child.running and child.ref.kind in self.stoppable
        return acp.SubagentUpdateSessionUpdate(
            session_update="subagent_update",
            session_id=child.ref.session_id,
            title=child.title,
            description=child.description,
            capabilities=(
                acp.SubagentSessionCapabilities(cancel=acp.SessionCancelCapabilities())
                if cancel
                else acp.SubagentSessionCapabilities()  # no mutation of the child offered
            ),
            state=child_state(child),
        )


def _status_line(child: ChildView) -> str:
    attempt = f"Attempt {child.attempt}" if child.attempt > 1 else "It"
    if child.running:
        return f"{attempt} is running." if child.attempt > 1 else "Started."
    if child.status == "completed":
        return f"{attempt} completed."
    if child.status in ("cancelled", "skipped"):
        return f"{attempt} was stopped ({child.status})."
    failure = f": {child.failure}" if child.failure else ""
    return f"{attempt} ended {child.status}{failure}."


def _unheard(session_id: str) -> str | None:
    return None


def _say(
    child: ChildView, family: str, message_id: str, text: str, *, handed_back: bool = False
) -> ChildUpdate:
    content = acp.TextContentBlock(type="text", text=text)
    update: acp.SessionUpdate
    if family == "user":
        update = acp.UserMessageChunkSessionUpdate(
            session_update="user_message_chunk", content=content, message_id=message_id
        )
    else:
        update = acp.AgentMessageChunkSessionUpdate(
            session_update="agent_message_chunk", content=content, message_id=message_id
        )
    return ChildUpdate(child.ref.session_id, update, child.muse_session_id, handed_back)
