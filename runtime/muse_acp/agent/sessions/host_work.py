"""Workflows and background tasks Muse runs for a session, found by the card that shows them.

Contract: a ``RunningWork`` is told of every item event relayed for its session (``note``) and
keeps, by the card's ``toolCallId``, the workflows (their ``workflowRunId``) and background tool
tasks (the item's ``itemId``, which ``task/stop`` names) still in progress; an item that ended,
or a tool call that is not in the background, is dropped. ``find`` answers which one a card
shows, for ``_muse/task``, and ``listed`` names them all in the order they started, each with
its card's title, for ``/tasks``. It also keeps the children of those workflows as Muse last
showed them (``workflow_children``, for ``/workflow``; ``child_attempt``, the current attempt of
one still running, for a child session's ``session/cancel``), and the subagents still running
(``subagent_running``, for the same). It is bounded (``MAX_RUNNING`` of
each, the oldest forgotten first) and keeps nothing once the work ended, nor once its host is
gone (``clear``): Muse's background work ends with its host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from muse_acp.agent.cards.child_sessions import ChildView, children_of
from muse_acp.agent.cards.tool_cards import card_title, tool_call_id
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_RUNNING", "RunningWork", "WorkTarget"]

MAX_RUNNING: Final = 256
"""Running workflows and tasks remembered per session."""


@dataclass(frozen=True, slots=True)
class WorkTarget:
    """What a card shows: a workflow (by run id) or a background task (by item id)."""

    kind: Literal["workflow", "task"]
    host_id: str
    title: str = ""
    """The title of the card that shows it."""


class RunningWork:
    """The session's running workflows and background tasks (see the module contract)."""

    def __init__(self) -> None:
        self._by_card: dict[str, WorkTarget] = {}
        self._children: dict[tuple[str, str], ChildView] = {}
        """The children of running workflows, by (run id, child id)."""
        self._subagents: dict[str, None] = {}
        """The ids of the subagents still running, in the order they started."""

    def __len__(self) -> int:
        return len(self._by_card)

    def note(self, params: WireModel) -> None:
        item = params.item if isinstance(params, msp.ItemEventParams) else None
        if isinstance(item, msp.SubagentItem):
            self._note_subagent(item)
            return
        if isinstance(item, msp.WorkflowItem):
            self._note_children(item)
            target = WorkTarget("workflow", item.workflow_run_id)
        elif isinstance(item, msp.ToolCallItem) and item.background:
            target = WorkTarget("task", item.item_id)
        elif isinstance(item, msp.ToolCallItem):
            self._by_card.pop(tool_call_id(item), None)  # back in the foreground, or never left
            return
        else:
            return
        card = tool_call_id(item)
        if item.status != "inProgress":
            self._by_card.pop(card, None)
            return
        # Work already known keeps its place in the order work started, with its latest title.
        self._by_card[card] = WorkTarget(target.kind, target.host_id, card_title(item))
        while len(self._by_card) > MAX_RUNNING:
            del self._by_card[next(iter(self._by_card))]

    def _note_children(self, item: msp.WorkflowItem) -> None:
        running = item.status == "inProgress"
        for child in children_of("", item):  # by Muse's ids: the session id is not needed
            key = (item.workflow_run_id, child.ref.key)
            self._children.pop(key, None)
            if running:
                self._children[key] = child
        while len(self._children) > MAX_RUNNING:
            del self._children[next(iter(self._children))]

    def _note_subagent(self, item: msp.SubagentItem) -> None:
        self._subagents.pop(item.subagent_id, None)
        if item.status == "inProgress":
            self._subagents[item.subagent_id] = None
        while len(self._subagents) > MAX_RUNNING:
            del self._subagents[next(iter(self._subagents))]

    def subagent_running(self, subagent_id: str) -> bool:
        """Whether the subagent ``subagent_id`` is still running, as Muse last showed it."""
        return subagent_id in self._subagents

    def child_attempt(self, run_id: str, child_id: str) -> int | None:
        """The current attempt of a workflow child still running, if it is."""
        child = self._children.get((run_id, child_id))
        return child.attempt if child is not None and child.running else None

    def workflow_children(self) -> list[ChildView]:
        """The children of the running workflows, as Muse last showed them."""
        return list(self._children.values())

    def find(self, card: str) -> WorkTarget | None:
        """The running workflow or background task ``card`` shows, if any."""
        return self._by_card.get(card)

    def listed(self) -> list[tuple[str, WorkTarget]]:
        """Every running workflow and background task, by card, oldest first."""
        return list(self._by_card.items())

    def clear(self) -> None:
        """Forget everything: the host that ran it is gone."""
        self._by_card.clear()
        self._children.clear()
        self._subagents.clear()
