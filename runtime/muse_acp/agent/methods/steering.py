"""Mid-turn steering: corrections added to the running turn, never a new turn.

Contract: two negotiations share one implementation: ``_muse/steer`` answers ``{status:
"accepted", turnId}`` and ``_session/steering`` ``{outcome: "injected"}``, both only after Muse
acknowledged ``turn/steer`` for that turn. Checked in this order, before anything is queued: the
method was negotiated (-32600), the session is open (-32002), the prompt converts (-32602), and
a turn that accepts steering is running and is the one ``expectedTurnId`` names (-32600; an
idle session with ``idleBehavior`` ``promptRequired`` gets ``promptRequired`` instead).
Without ``expectedTurnId`` a correction targets the turn running when it arrived. Corrections
wait in the session's ``SteeringQueue`` and go one at a time, each only to its own turn; no path
here sends ``turn/start``.
"""

from __future__ import annotations

from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.prompt_content import convert_prompt
from muse_acp.agent.turns.steering_queue import SteerTarget
from muse_acp.rpc import INVALID_REQUEST, RequestContext, RpcError
from muse_acp_wire import acp, msp

__all__ = ["handle_compatible_steering", "handle_muse_steer"]

PROMPT_REQUIRED: Final = "promptRequired"


def _target(session: AcpSession, expected_turn_id: str | None) -> tuple[SteerTarget, str]:
    turn = None if session.closed else session.turn
    if turn is None or turn.turn_id is None:
        raise RpcError(
            INVALID_REQUEST,
            f"session {session.session_id} has no running turn to steer, and steering never "
            "starts one; send the input with session/prompt",
        )
    if not turn.steerable:
        raise RpcError(
            INVALID_REQUEST,
            f"turn {turn.turn_id} of session {session.session_id} is ending or being "
            "cancelled and accepts no more corrections; send a new prompt once it ends",
        )
    if expected_turn_id is not None and expected_turn_id != turn.turn_id:
        raise RpcError(
            INVALID_REQUEST,
            f"turn {expected_turn_id} is not running in session {session.session_id} (turn "
            f"{turn.turn_id} is); steer the turn announced in muse/activeTurnId",
            {"activeTurnId": turn.turn_id},
        )
    return turn, turn.turn_id


async def _steer(
    session: AcpSession,
    target: SteerTarget,
    turn_id: str,
    parts: list[msp.TurnInputPart],
    rctx: RequestContext,
) -> str:
    ticket = session.steering.admit(target, turn_id)
    return await session.steering.send(ticket, parts, rctx.commit)


def _not_negotiated(method: str, opt_in: str) -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        f"{method} was not negotiated on this connection; opt in with "
        f"clientCapabilities._meta{opt_in} at initialize",
    )


async def handle_muse_steer(
    ctx: AgentContext, params: acp.MuseSteerRequest, rctx: RequestContext
) -> acp.MuseSteerResponse:
    if not ctx.negotiated.steering:
        raise _not_negotiated("_muse/steer", '["muse/steering"] = 1')
    session = ctx.sessions.require(params.session_id)
    parts = convert_prompt(params.prompt)
    target, turn_id = _target(session, params.expected_turn_id)
    acknowledged = await _steer(session, target, turn_id, parts, rctx)
    return acp.MuseSteerResponse(status="accepted", turn_id=acknowledged)


def _wants_prompt_required(params: acp.SessionSteeringRequest) -> bool:
    options = params.field_meta.steering if params.field_meta is not None else None
    return options is not None and options.idle_behavior == PROMPT_REQUIRED


async def handle_compatible_steering(
    ctx: AgentContext, params: acp.SessionSteeringRequest, rctx: RequestContext
) -> acp.SessionSteeringResponse:
    if not ctx.negotiated.compatible_steering:
        raise _not_negotiated("_session/steering", '.steering = {"supported": true}')
    session = ctx.sessions.require(params.session_id)
    parts = convert_prompt(params.prompt)
    if session.busy is None and session.turn is None and _wants_prompt_required(params):
        return acp.SessionSteeringResponse(outcome="promptRequired", reason="noRunningTurn")
    target, turn_id = _target(session, params.expected_turn_id)
    await _steer(session, target, turn_id, parts, rctx)
    return acp.SessionSteeringResponse(outcome="injected")
