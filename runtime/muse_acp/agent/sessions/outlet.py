"""A session's update outlet: the one way its ``session/update`` notifications reach the client.

Contract: an ``UpdateOutlet`` belongs to one session (``AcpSession.outlet``) and sends its
updates in the order their sends begin, noting on the way out what the session keeps of them
(``SessionRecord``): Muse's title as the host title (the user's /rename title replaces it), a
usage update's window, an announced goal. A usage update goes out with the session's latest
figures (``usage``), unless identical to the last one sent. ``send`` raises ``ConnectionClosed``
once the client has gone; ``send_nowait``, the event lane's, queues a plain text chunk only
when the writer takes it at once (else False); ``send_unless_gone(update, write)`` is the
turns' guard (only the send that found the client gone returns True). The outlet alone decides
what the client's capabilities change: ``tell(notice)`` sends a ``notice`` update with
``session.notices``, else chat text; ``send`` passes compaction updates only with
``session.compaction``, plans as ``plans.for_client`` says, and child sessions
(``subagent_update``, each ``ChildUpdate`` under the child's id) only with ``subagents``
(``takes_children``); ``show_compaction`` (``/compact``) sends updates or chat text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from muse_acp.agent.errors.notices import Notice, notice_update
from muse_acp.agent.translation.child_transcripts import ChildUpdate
from muse_acp.agent.translation.chunk_frames import (
    encoded_chunk,
    encoded_plain,
    encoded_plain_notification,
    encoded_session_id,
    encoded_update,
    encoded_update_frame,
    encoded_update_json,
)
from muse_acp.agent.translation.compactions import Compaction
from muse_acp.agent.translation.goal_state import GoalSeen, announced_goal
from muse_acp.agent.translation.plans import for_client
from muse_acp.agent.translation.status import ContextUse
from muse_acp.agent.translation.translate import PlainChunk, Update
from muse_acp.agent.translation.usage import (
    WINDOW_ONLY,
    PlanUse,
    TokenUse,
    WindowUse,
    usage_json,
    with_usage,
)
from muse_acp.rpc import ConnectionClosed, Payload, encode_notification
from muse_acp_wire import acp

__all__ = ["ClientWriter", "SessionRecord", "UpdateOutlet"]


class ClientWriter(Protocol):
    """The ACP connection's sending side (``rpc.Connection`` is one)."""

    async def notify(self, method: str, params: Payload = None) -> None: ...

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool: ...


class SessionRecord(Protocol):
    """What a session remembers of the updates it sent (``session.AcpSession`` is one)."""

    host_title: str | None
    user_title: str | None
    context: ContextUse | None
    tokens: TokenUse | None
    plan_usage: PlanUse | None
    goal: GoalSeen | None


class UpdateOutlet:
    """Sends one session's updates to the client (see the module contract)."""

    __slots__ = (
        "_client",
        "_compaction",
        "_encoded_id",
        "_last_figures",
        "_last_usage",
        "_notices",
        "_plans",
        "_record",
        "_subagents",
        "gone",
        "session_id",
    )

    def __init__(
        self,
        session_id: str,
        client: ClientWriter,
        record: SessionRecord,
        *,
        notices: bool = False,
        compaction: bool = False,
        plans: bool = False,
        subagents: bool = False,
    ) -> None:
        self.session_id = session_id
        self._client = client
        self._record = record
        self._notices = notices
        """The client set ``session.notices``: warnings go out as ``notice`` updates."""
        self._compaction = compaction
        """The client set ``session.compaction``: it is sent compaction updates."""
        self._plans = plans
        """The client takes plan operations (``plans.for_client``)."""
        self._subagents = subagents
        """The client set ``subagents``: child sessions are announced and sent to it."""
        self._encoded_id = encoded_session_id(session_id)
        """The session id as ``chunk_frames`` writes it, encoded once."""
        self.gone = False
        """A guarded send found the client gone (``send_unless_gone``)."""
        self._last_usage: bytes | None = None
        """The last usage update sent, its own encoding; an identical one is not sent again."""
        self._last_figures: tuple[int, int, TokenUse | None, PlanUse | None] | None = None
        """What made ``_last_usage`` when that was the window's use with the session's figures
        (``usage_json``): the same window with the very same figures makes the same."""

    @property
    def takes_children(self) -> bool:
        """Child sessions are sent to the client (it set ``subagents``)."""
        return self._subagents

    def send_nowait(self, update: Update, *, now: bool = False, hand_over: bool = False) -> bool:
        """``send`` of a plain text chunk, if the client's writer takes it at once
        (``Connection.send_notification_nowait``; ``now``: written at once if it can be;
        ``hand_over``: and the client goes first); False, with nothing sent, for anything else."""
        if isinstance(update, PlainChunk):
            frame = encoded_plain_notification(self._encoded_id, update)
            if frame is not None:
                return self._client.send_notification_nowait(frame, now=now, hand_over=hand_over)
        return False

    async def send(self, update: Update) -> None:
        """Send one ``session/update``, noting what the session remembers of it; the writer is
        awaited only when it cannot take the update at once.

        Raises:
            ConnectionClosed: the client has gone.
        """
        if isinstance(update, PlainChunk):  # nearly every update of a streaming turn
            if self.send_nowait(update):
                return
            plain = encoded_plain(self._encoded_id, update)
            if plain is not None:
                await self._client.notify("session/update", plain)
                return
            update = update.model()
        elif isinstance(update, WindowUse | acp.UsageUpdateSessionUpdate):
            encoded = self._usage(update)  # after every model step
            if encoded is not None:
                await self._send_encoded(encoded)
            return
        elif isinstance(update, ChildUpdate | acp.SubagentUpdateSessionUpdate):
            if not self._subagents:
                return  # a client without child sessions sees the parent's card alone
            if isinstance(update, ChildUpdate):
                child = acp.SessionNotification(session_id=update.session_id, update=update.update)
                await self._client.notify("session/update", child)
                return
        if isinstance(update, Compaction):
            if not self._compaction:
                return  # before compaction updates, a client was shown none
        elif isinstance(update, acp.PlanSessionUpdate | acp.PlanUpdateSessionUpdate):
            shown = for_client(update, plans=self._plans)
            if shown is None:
                return
            update = shown
        record = self._record
        if isinstance(update, acp.SessionInfoUpdateSessionUpdate) and "title" in (
            update.model_fields_set
        ):
            if record.user_title is None:
                record.host_title = update.title
            elif update.title != record.user_title:
                update = update.model_copy(update={"title": record.user_title})
        seen = announced_goal(update)
        if seen is not None:
            record.goal = seen
        # A chunk from its template, else the update's own encoding in the notification's:
        # building and validating the notification model cost as much as encoding the update.
        params = encoded_chunk(self._encoded_id, update) or encoded_update(self._encoded_id, update)
        if params is not None and self._client.send_notification_nowait(
            encode_notification("session/update", params)
        ):
            return  # the writer took it at once, as the awaited send would, four awaits deeper
        await self._client.notify(
            "session/update",
            params or acp.SessionNotification(session_id=self.session_id, update=update),
        )

    def _usage(self, update: WindowUse | acp.UsageUpdateSessionUpdate) -> bytes | None:
        """The encoding of a usage update with the session's latest figures, noted as the last
        one sent; None when the client has these very figures already."""
        record = self._record
        context = record.context
        if context is None or context.used != update.used or context.size != update.size:
            record.context = ContextUse(update.used, update.size)
        tokens, plan = record.tokens, record.plan_usage
        if isinstance(update, WindowUse) or update.model_fields_set == WINDOW_ONLY:
            last = self._last_figures
            if (
                last is not None
                and last[0] == update.used
                and last[1] == update.size
                and last[2] is tokens
                and last[3] is plan
            ):
                # The very figures of the last one (the window Muse reports after each step's
                # tokens, nearly always): it would be sent as the same bytes, so it is not sent.
                return None
            self._last_figures = (update.used, update.size, tokens, plan)
            window = (
                update if isinstance(update, WindowUse) else WindowUse(update.used, update.size)
            )
            encoded = usage_json(window, tokens, plan)
        else:
            self._last_figures = None
            model = with_usage(update, tokens, plan)  # the latest figures
            encoded = model.__pydantic_serializer__.to_json(
                model, by_alias=True, exclude_unset=True
            )
        # What the client would get is compared (the same bytes are the same figures).
        if encoded == self._last_usage:
            return None
        self._last_usage = encoded
        return encoded

    async def _send_encoded(self, update: bytes) -> None:
        """Send the usage update encoded as ``update`` (``_usage``): at once when the writer
        takes it, else through the awaited way."""
        frame = encoded_update_frame(self._encoded_id, update)
        if frame is not None and self._client.send_notification_nowait(frame):
            return
        params = encoded_update_json(self._encoded_id, update)
        await self._client.notify(
            "session/update",
            params
            or acp.SessionNotification(
                session_id=self.session_id,
                update=acp.UsageUpdateSessionUpdate.model_validate_json(update),
            ),
        )

    async def tell(self, notice: Notice) -> None:
        """Show ``notice`` to the user as this client takes it (see the module contract).

        Raises:
            ConnectionClosed: the client has gone.
        """
        if self._notices:
            await self.send(notice_update(notice))
        elif notice.chat:
            await self.send(
                acp.AgentMessageChunkSessionUpdate(
                    session_update="agent_message_chunk",
                    content=acp.TextContentBlock(type="text", text=notice.text),
                )
            )

    async def show_compaction(self, updates: Sequence[Compaction], chat: str | None) -> None:
        """Show a compaction the user asked for as this client takes it (see the module
        contract); ``chat`` None: a client without compaction updates sees nothing.

        Raises:
            ConnectionClosed: the client has gone.
        """
        if self._compaction:
            for update in updates:
                await self.send(update)
        elif chat is not None:
            await self.send(
                acp.AgentMessageChunkSessionUpdate(
                    session_update="agent_message_chunk",
                    content=acp.TextContentBlock(type="text", text=chat),
                )
            )

    async def send_unless_gone(
        self,
        update: Update,
        write: Callable[[Awaitable[None]], Awaitable[None]] | None = None,
    ) -> bool:
        """``send`` through ``write``, unless the client has gone; True only when this send
        found it gone (see the module contract)."""
        if self.gone:
            return False
        try:
            sending = self.send(update)
            await (sending if write is None else write(sending))
        except ConnectionClosed:
            self.gone = True
            return True
        return False
