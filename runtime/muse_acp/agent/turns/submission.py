"""A prompt's ``turn/start``, written before the turn that follows it is set up.

Contract: ``submit`` makes the session's host events wait (``HeldEvents``), then writes
``turn/start`` within the submit budget; what it returns names the turn's ``commandId``, what was
sent (or how sending failed, which the turn reports in its ``submitting`` phase) and the events
held meanwhile. Muse starts on the turn while muse-acp sets up what follows it; the turn takes
the held events, in arrival order, as it starts listening (``TurnEvents.listen``), which ends the
holding. The holding always ends with the block ``HeldEvents`` is used in, so a turn that never
listened (setting it up failed) keeps no session's events from their listener.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from types import TracebackType

from muse_acp.agent.hosting import hosts
from muse_acp.host.client import MspHost
from muse_acp.host.event_lane import DELTA
from muse_acp.ids import new_uuid7
from muse_acp.rpc import OutgoingRequest, RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["HeldEvents", "Submission", "submit", "submit_at_once", "turn_start_params"]


class HeldEvents:
    """One session's host events from ``turn/start`` written until its turn listens: kept in
    arrival order, at most ``limit`` (the first one over it is remembered, ``overflowed``)."""

    def __init__(self, host: MspHost, session_id: str, limit: int) -> None:
        self.events: deque[tuple[str, WireModel]] = deque()
        self.overflowed: str | None = None
        """The method of the first event over the limit (the turn fails on it), if one came."""
        self.limit = limit
        self._listening = host.listen(session_id, self._hold, self._hold_delta)

    async def _hold(self, method: str, params: WireModel) -> None:
        self._keep(method, params)

    def _hold_delta(self, params: msp.ItemDeltaParams) -> None:
        self._keep(DELTA, params)

    def _keep(self, method: str, params: WireModel) -> None:
        if len(self.events) < self.limit:
            self.events.append((method, params))
        elif self.overflowed is None:
            self.overflowed = method

    def close(self) -> None:
        """Stop holding (idempotent; a listener registered since then stays)."""
        self._listening.close()

    def __enter__(self) -> HeldEvents:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class Submission:
    """A written ``turn/start`` (see the module contract)."""

    command_id: str
    sent: OutgoingRequest | RpcError
    held: HeldEvents


async def submit(
    host: MspHost,
    params: msp.TurnStartParams,
    *,
    budget: float,
    hold_limit: int,
) -> Submission:
    """Hold ``params.session_id``'s events, then write ``turn/start`` with ``params`` (see the
    module contract); a failure to send is returned in ``Submission.sent``, not raised."""
    held = HeldEvents(host, params.session_id, hold_limit)
    try:
        async with hosts.asking(host, "turn/start", phase="submitting", budget=budget):
            sent: OutgoingRequest | RpcError = await host.start("turn/start", params)
    except RpcError as failure:
        sent = failure
    except BaseException:
        held.close()
        raise
    return Submission(params.command_id, sent, held)


def submit_at_once(
    host: MspHost, params: msp.TurnStartParams, *, hold_limit: int
) -> Submission | None:
    """``submit`` when ``turn/start`` goes out at once (``MspHost.start_at_once``); None, with
    nothing sent and nothing held, when it would have to wait. Nothing of this process runs
    between the write and the holding, so no event of the turn can come before it is held; the
    write hands the core to Muse (``hand_over``), which has nothing to do until it reads it."""
    sent = host.start_at_once("turn/start", params, hand_over=True)
    if sent is None:
        return None
    return Submission(params.command_id, sent, HeldEvents(host, params.session_id, hold_limit))


def turn_start_params(
    session_id: str,
    parts: list[msp.TurnInputPart],
    effort: msp.ReasoningEffort | None,
    workspace_roots: list[str] | None,
) -> msp.TurnStartParams:
    """``turn/start``'s params for a new turn: a fresh ``commandId``; only an explicit effort
    and roots Muse may lack are named (None is left out)."""
    return msp.TurnStartParams(
        command_id=new_uuid7(),
        session_id=session_id,
        input=parts,
        reasoning_effort=effort,
        workspace_roots=workspace_roots,
    )
