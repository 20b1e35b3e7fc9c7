"""A turn Muse runs ahead of a prompt's own: the lead, followed through that prompt.

Contract: as a prompt's ``turn/start`` reaches an idle session, Muse may start a turn by itself
(a goal's) and queue the prompt's behind it. Inside ``following_leads``, a prompt's turn given to
``watch`` follows such a turn (``turn_events``: it starts at that turn's ``turn/started``) as a
turn Muse started by itself: its output shown as the prompt's, its approvals and questions asked,
Stop interrupting it (``turn/interrupt``: Muse pauses its goal) as it cancels the prompt's queued
turn; once it ends, the prompt's turn is announced as the running one again and runs. Leaving the
block, a lead still running is stopped and its end awaited (within the cancel budget); a host a
lead left in an unknown state is closed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from anyio.abc import TaskGroup

from muse_acp.agent.announcements.session_state import SessionState
from muse_acp.agent.context import AgentContext
from muse_acp.agent.prompts.waiting_turn import translator_for
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.turn import ActiveTurn
from muse_acp.host.client import MspHost
from muse_acp.rpc import RpcError
from muse_acp.tasks import task_group

__all__ = ["LeadTurns", "following_leads"]

logger: Final = logging.getLogger("muse_acp.agent")


class LeadTurns:
    """The leads of one prompt's turn on ``host`` (see the module contract)."""

    def __init__(
        self, ctx: AgentContext, session: AcpSession, host: MspHost, tasks: TaskGroup
    ) -> None:
        self._ctx, self._session, self._host, self._tasks = ctx, session, host, tasks
        self._turn: ActiveTurn | None = None
        self._lead: ActiveTurn | None = None

    def watch(self, turn: ActiveTurn) -> None:
        """Follow the leads of ``turn``, the prompt's turn (not yet run)."""
        self._turn = turn
        turn.leads = self._start

    def _start(self, turn_id: str) -> ActiveTurn:
        ctx, session = self._ctx, self._session
        translator = translator_for(ctx, session, self._host)
        lead = ActiveTurn(
            session, self._host, translator, ctx.turn_options, SessionState(ctx, session)
        )
        lead.interrupts = True  # Stop interrupts it (Muse pauses its goal)
        lead.listens = False  # the prompt's turn feeds it
        self._lead = lead
        logger.info("session %s: Muse runs turn %s first", session.session_id, turn_id)
        self._tasks.start_soon(self._follow, lead, turn_id)
        return lead

    async def _follow(self, lead: ActiveTurn, turn_id: str) -> None:
        session_id = self._session.session_id
        try:
            stop = await lead.rejoin(turn_id, [])
            logger.info("session %s: lead turn %s ended: %s", session_id, turn_id, stop)
        except RpcError as error:
            logger.warning(
                "session %s: lead turn %s failed: %s", session_id, turn_id, error.message
            )
        finally:
            # Ended by no event of the session (a stop Muse never confirmed, a failure).
            ended = self._turn is not None and self._turn.events.lead_ended(lead)
        if ended and self._turn is not None:
            await self._turn.announce_running()

    def close(self) -> None:
        """Stop a lead still running (its end is awaited by the block)."""
        if self._lead is not None and not self._lead.settled:
            self._lead.request_cancel()

    @property
    def unsettled(self) -> bool:
        """A lead left the host in an unknown state."""
        return self._lead is not None and self._lead.host_unsettled


@asynccontextmanager
async def following_leads(
    ctx: AgentContext, session: AcpSession, host: MspHost
) -> AsyncIterator[LeadTurns]:
    """Leads of a prompt's turn on ``host`` are followed while the block runs (see the module
    contract)."""
    leads: LeadTurns | None = None
    try:
        async with task_group() as tasks:
            leads = LeadTurns(ctx, session, host, tasks)
            try:
                yield leads
            finally:
                leads.close()
    finally:
        if leads is not None and leads.unsettled:
            session.execution.close()
