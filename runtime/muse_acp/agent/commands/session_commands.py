"""MSP commands a local slash command sends to the session's own host, outside any turn.

Contract: ``session_host`` gets the session's execution host ready exactly as a turn would
(starting it, and attaching the session, when none runs; a model Muse refuses puts the session
back on the model it last accepted, then raises), where a ``session/cancel`` stops the wait:
None then. ``send_command`` sends one command to that host while holding it (so its idle timer
never closes it under the request) and while listening to the session's events, which go to
``on_event`` in arrival order until ``until`` is set, the host dies or ``wait`` seconds passed
after the acknowledgement, whichever comes first (nothing is waited for when ``until`` is None,
or when ``awaits`` says the acknowledgement promises no such event, as a noop does). The host's
errors are mapped as ``hosts.ask`` maps them (``refusal`` first), within the submit budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

from muse_acp.agent.announcements.catalog import fall_back_model
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.hosts import Refusal, ask
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import EventListener, MspHost
from muse_acp.tasks import wait_first
from muse_acp_wire._base import WireModel

__all__ = ["send_command", "session_host"]

R = TypeVar("R", bound=WireModel)


async def session_host(ctx: AgentContext, session: AcpSession, work: SessionWork) -> MspHost | None:
    """The session's ready execution host, or None when a cancel stopped the wait."""
    host: MspHost | None = None
    with work.interruptibly():
        try:
            host = await session.execution.ready()
        except failures.ModelRefusal:
            await fall_back_model(ctx, session)
            raise
    return None if work.cancel_requested else host


async def send_command(
    session: AcpSession,
    host: MspHost,
    method: str,
    params: WireModel,
    result_type: type[R],
    *,
    on_event: EventListener,
    until: anyio.Event | None = None,
    wait: float = 0.0,
    awaits: Callable[[R], bool] = lambda _: True,
    refusal: Refusal | None = None,
) -> R:
    """Send ``method`` and relay the session's events meanwhile (see the module contract).

    Raises:
        RpcError: the mapped host failure, or what ``refusal`` made of the host's error.
    """
    budget = session.hosting.config.deadlines.submit
    async with session.execution.holding(host):
        listening = host.listen(session.session_id, on_event)
        try:
            result = await ask(
                host,
                method,
                params,
                result_type,
                phase="submitting",
                budget=budget,
                refusal=refusal,
            )
            if until is not None and awaits(result):
                with anyio.move_on_after(wait):
                    await wait_first(until, host.dead)
            return result
        finally:
            listening.close()
