"""One turn of the fake model: its state and the events every step is made of.

Contract: a ``Turn`` belongs to one ``LiveSession`` and emits, through it, the events of the
turn's items: user messages, reasoning summaries, agent messages (a live-only start, live-only
text deltas, then a durable completion), token and context usage and todo lists; tool calls are
``muse_acp.sim.model.tools.ToolCall``. Items whose completion has not been emitted yet are
registered in ``open_items`` with how to complete them ``cancelled``, so a stopped turn can
close each one before it reports ``turn/completed``. Steering input arrives through ``steer``
and is consumed by the runner between steps. Token figures are a deterministic function of the
text involved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, TypeAlias

import anyio

from muse_acp.sim.model.prices import session_totals, step_cache
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.script.directives import split_text
from muse_acp.sim.script.turn_requests import Steer, TurnRequest
from muse_acp.sim.state.catalog import effective_effort
from muse_acp.sim.state.ids import new_uuid7, now_ms, rfc3339_now
from muse_acp_wire.msp import (
    AgentMessageItem,
    CompactionItem,
    CumulativeTokenUsage,
    ItemDeltaParams,
    ItemEventParams,
    ReasoningItem,
    SessionContextUsageParams,
    SessionTodoListChangedParams,
    SessionTokenUsageParams,
    SubagentItem,
    TodoItem,
    TokenCounts,
    ToolCallItem,
    UserMessageItem,
    WorkflowItem,
)

if TYPE_CHECKING:
    from muse_acp.sim.state.context import HostContext
    from muse_acp.sim.state.session import LiveSession, Position

__all__ = ["CONTEXT_WINDOW", "Item", "Turn"]

CONTEXT_WINDOW: Final = 1_000_000
REASONING_TOKENS: Final[Mapping[str, int]] = MappingProxyType(
    {"none": 0, "minimal": 8, "low": 16, "medium": 32, "high": 64, "xhigh": 128, "max": 256}
)
"""Reasoning tokens a model step reports per reasoning effort (``ultra`` counts as ``max``)."""

Item: TypeAlias = (
    UserMessageItem
    | AgentMessageItem
    | ReasoningItem
    | ToolCallItem
    | WorkflowItem
    | CompactionItem
    | SubagentItem
)


def estimate_tokens(text: str) -> int:
    return len(text.encode()) // 4


@dataclass(slots=True)
class Turn:
    """See the module contract."""

    ctx: HostContext
    session: LiveSession
    request: TurnRequest
    started_ms: int = field(default_factory=now_ms)
    first_token_ms: int | None = None
    open_items: dict[str, Callable[[], Awaitable[None]]] = field(default_factory=dict)
    steers: deque[Steer] = field(default_factory=deque)
    steered: anyio.Event = field(default_factory=anyio.Event)
    phase: str = "the model was working"
    """What the turn is doing, for the reason a stopped turn reports."""
    steps: int = 0

    @property
    def turn_id(self) -> str:
        return self.request.turn_id

    @property
    def session_id(self) -> str:
        return self.session.session_id

    def steer(self, steer: Steer) -> None:
        self.steers.append(steer)
        self.steered.set()

    def take_steers(self) -> list[Steer]:
        taken = list(self.steers)
        self.steers.clear()
        self.steered = anyio.Event()
        return taken

    def _item_params(self, item: Item) -> Callable[[Position], ItemEventParams]:
        def build(pos: Position) -> ItemEventParams:
            if pos.source_range is None:
                return ItemEventParams(
                    session_id=self.session_id, view_cursor=pos.cursor, item=item
                )
            return ItemEventParams(
                session_id=self.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                item=item,
            )

        return build

    async def item_event(self, method: str, item: Item, *, durable: bool = True) -> None:
        await self.session.emit(
            method, self._item_params(item), durable=durable, item_id=item.item_id
        )

    def record_item(self, method: str, item: Item) -> tuple[ItemEventParams, bytes]:
        """Record a durable item event without sending it."""
        return self.session.record(method, self._item_params(item), item_id=item.item_id)

    def finished_message(self, text: str) -> AgentMessageItem:
        """An agent message that exists only completed (revision 1), as a page shows one whose
        start and deltas were never recorded."""
        return AgentMessageItem(
            item_id=new_uuid7(),
            kind="agentMessage",
            turn_id=self.turn_id,
            revision=1,
            status="completed",
            recorded_at=rfc3339_now(),
            text=text,
        )

    async def delta(self, item_id: str, member: str, text: str) -> None:
        if self.first_token_ms is None:
            self.first_token_ms = now_ms()
        await self.session.emit(
            "item/delta",
            lambda pos: ItemDeltaParams(
                session_id=self.session_id,
                view_cursor=pos.cursor,
                item_id=item_id,
                field=member,
                delta=text,
            ),
            durable=False,
        )

    async def user_message(
        self, text: str, command_id: str, *, steered: bool = False
    ) -> UserMessageItem:
        request = self.request
        extra: dict[str, object] = {}
        if not steered and request.display_text is not None:
            extra["display_text"] = request.display_text
        if not steered and request.attachments:
            extra["attachments"] = list(request.attachments)
        if steered:
            extra["steered"] = True
        item = UserMessageItem.model_validate(
            {
                "item_id": new_uuid7(),
                "kind": "userMessage",
                "turn_id": self.turn_id,
                "revision": 1,
                "status": "completed",
                "recorded_at": rfc3339_now(),
                "text": text,
                "command_id": command_id,
                **extra,
            },
            by_name=True,
        )
        await self.item_event("item/completed", item)
        return item

    async def reasoning(self, summary: str) -> None:
        item_id = new_uuid7()

        def item(revision: int, status: str, parts: list[str]) -> ReasoningItem:
            return ReasoningItem(
                item_id=item_id,
                kind="reasoning",
                turn_id=self.turn_id,
                revision=revision,
                status=status,
                recorded_at=rfc3339_now(),
                summary=parts,
            )

        self.open_items[item_id] = lambda: self.item_event(
            "item/completed", item(2, "cancelled", [summary])
        )
        await self.item_event("item/started", item(1, "inProgress", []))
        await self.delta(item_id, "summary.0", summary)
        del self.open_items[item_id]
        await self.item_event("item/completed", item(2, "completed", [summary]))

    async def say(self, text: str, pieces: Sequence[str] | None = None) -> None:
        """An agent message: live-only start and deltas (``pieces``, which join to ``text``;
        by default ``split_text(text)``), then its durable completion."""
        item_id = new_uuid7()
        spoken: list[str] = []

        def item(revision: int, status: str, body: str, recorded: bool) -> AgentMessageItem:
            if not recorded:
                return AgentMessageItem(
                    item_id=item_id,
                    kind="agentMessage",
                    turn_id=self.turn_id,
                    revision=revision,
                    status=status,
                    text=body,
                )
            return AgentMessageItem(
                item_id=item_id,
                kind="agentMessage",
                turn_id=self.turn_id,
                revision=revision,
                status=status,
                recorded_at=rfc3339_now(),
                text=body,
            )

        self.open_items[item_id] = lambda: self.item_event(
            "item/completed", item(2, "cancelled", "".join(spoken), True)
        )
        await self.item_event("item/started", item(1, "inProgress", "", False), durable=False)
        for piece in split_text(text) if pieces is None else pieces:
            await self.delta(item_id, "text", piece)
            if self.ctx.options.faults.exits_at("stream"):
                exit_now("exit:stream")
            spoken.append(piece)
        del self.open_items[item_id]
        await self.item_event("item/completed", item(2, "completed", text, True))

    async def usage(self, output_text: str, *, final: bool) -> None:
        """``session/tokenUsage`` then ``session/contextUsage`` for one model step."""
        self.steps += 1
        meta = self.session.meta
        named = self.request.effort or meta.reasoning_effort
        effort = effective_effort(self.ctx.profile, meta.model_id, named) or "medium"
        prompt_tokens = 1200 + estimate_tokens(self.request.text) + 40 * self.steps
        output_tokens = 20 + estimate_tokens(output_text)
        total = prompt_tokens + output_tokens
        before = self.session.fold.cumulative
        counts = TokenCounts(
            input_tokens=prompt_tokens,
            output_tokens=output_tokens,
            **step_cache(first=before is None),
            reasoning_tokens=REASONING_TOKENS.get(effort, REASONING_TOKENS["max"]),
        )
        profile = self.ctx.profile
        extra = session_totals(before, counts, self.session.meta.model_id)
        if not profile.cache_totals:  # members this version's hosts do not send
            extra.pop("cache_read_tokens")
            extra.pop("cache_write_tokens")
        if not profile.session_cost:
            extra.pop("cost", None)
        cumulative = CumulativeTokenUsage(
            prompt_tokens=(before or {}).get("promptTokens", 0) + prompt_tokens,
            output_tokens=(before or {}).get("outputTokens", 0) + output_tokens,
            total_tokens=(before or {}).get("totalTokens", 0) + total,
            **extra,
        )

        def token_usage(pos: Position) -> SessionTokenUsageParams:
            base = SessionTokenUsageParams(
                session_id=self.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=self.turn_id,
                model_id=self.session.meta.model_id,
                usage=counts,
                prompt_tokens=prompt_tokens,
                total_tokens=total,
                duration_ms=max(1, now_ms() - self.started_ms),
                cumulative=cumulative,
            )
            if not final:
                base.finish_reason = "tool_calls"
            return base

        await self.session.emit("session/tokenUsage", token_usage)
        await self.session.emit(
            "session/contextUsage",
            lambda pos: SessionContextUsageParams(
                session_id=self.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                window_tokens=CONTEXT_WINDOW,
                used_tokens=total,
                pressure="normal",
            ),
        )

    async def plan(self) -> None:
        entries = [
            TodoItem(text="Read the request", status="completed"),
            TodoItem(text="Simulate the work", status="inProgress"),
            TodoItem(text="Report the result", status="pending"),
        ]
        numbered = self.ctx.profile.declares("SessionTodoListChangedParams", "revision")
        self.session.todo_revision += 1
        revision = self.session.todo_revision

        def changed(pos: Position) -> SessionTodoListChangedParams:
            note = SessionTodoListChangedParams(
                session_id=self.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                items=entries,
            )
            if numbered:  # only where the bundle declares them; the planning tool wrote it
                note.revision, note.source_tool = revision, "todo_write"
            return note

        await self.session.emit("session/todoListChanged", changed)
