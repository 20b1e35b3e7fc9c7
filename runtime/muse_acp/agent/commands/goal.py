"""``/goal``: the session goal, shown on every Muse and controlled where Muse has ``goal/*``.

Contract: ``run_goal`` answers with one agent message. ``/goal`` (or ``/goal show``) shows the
goal Muse last announced, with no host involved. ``/goal set TEXT``, ``edit TEXT`` (replace the
objective), ``pause``, ``resume`` and ``clear`` send the matching ``goal/*`` command on a Muse
offering goals (``features``: ``goals``), and the reply shows the new goal; an older Muse gets
nothing and the reply names the version needed. Anything else lists the forms. When the command
woke a turn for the goal (named in Muse's acknowledgement), the prompt stays open and follows
that turn to its end as its own (``goal_turn``): shown live, stopped by ``session/cancel``, a
prompt sent meanwhile waiting its turn; the prompt ends with the turn's stop reason. Errors:
failing to reach the host is an error of the prompt; a refusal or failure of the command is told
in the reply and changes nothing; a goal turn that fails fails the prompt, as a turn would.
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.agent.commands.session_commands import session_host
from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.prompts.goal_turn import GoalWatch, follow_goal_turn
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.goal_state import goal_text
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import MspHost
from muse_acp.host.features import HostFeatures, first_declaring
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp.tasks import wait_first
from muse_acp.text import clip
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["GOAL_HINT", "OBJECTIVE_LIMIT", "run_goal"]

GOAL_HINT: Final = "set TEXT | edit TEXT | pause | resume | clear (nothing: show the goal)"
OBJECTIVE_LIMIT: Final = 4000
"""Longest goal text sent to Muse, in characters."""
_USAGE: Final = (
    "Use /goal to show the session goal, /goal set TEXT to give Muse a goal, /goal edit TEXT "
    "to replace its objective, or /goal pause, /goal resume or /goal clear. Nothing was changed."
)
_DONE: Final = MappingProxyType(
    {
        "set": "Goal set.",
        "edit": "Goal edited.",
        "pause": "Goal paused.",
        "resume": "Goal resumed.",
        "clear": "Goal cleared.",
    }
)
_WORKING: Final = (
    "Muse is working on the goal now: its turn follows here, Stop interrupts it, and "
    "what you send meanwhile waits for it."
)
_REFUSALS: Final = MappingProxyType(
    {
        "missing_goal": "This session has no goal, so there was nothing to {verb}. Set one with "
        "/goal set TEXT.",
        "invalid_goal_state": "The goal is not {state}, so there was nothing to {verb}. Send /goal "
        "to see it.",
    }
)


class _Refused(RpcError):
    """Muse refused the goal command; the message says why, in the user's terms."""


async def run_goal(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """Run ``/goal`` with its ``argument`` (see the module contract)."""
    verb, _, rest = (argument or "").strip().partition(" ")
    verb = verb.lower()
    objective = rest.strip()
    if verb in ("", "show", "status") and not objective:
        await session.say(_shown(session))
        return "end_turn"
    texted = verb in ("set", "edit")
    if verb not in _DONE or texted != bool(objective):
        await session.say(_USAGE)
        return "end_turn"
    features = await _features(ctx, session)
    if not features.has("goals"):
        await session.say(_too_old(features.version))
        return "end_turn"
    if len(objective) > OBJECTIVE_LIMIT:
        await session.say(
            f"The goal is {len(objective):,} characters long; Muse takes at most "
            f"{OBJECTIVE_LIMIT:,}. Shorten it and send /goal {verb} again. Nothing was changed."
        )
        return "end_turn"
    host = await session_host(ctx, session, work)
    if host is None:
        return "cancelled"
    async with session.execution.holding(host):
        watch = GoalWatch(session, host)
        watch.start()
        try:
            return await _command_and_turn(ctx, session, work, host, watch, verb, objective)
        finally:
            watch.close()


async def _command_and_turn(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    host: MspHost,
    watch: GoalWatch,
    verb: str,
    objective: str,
) -> acp.StopReason:
    """Send the command, reply, then follow the turn it woke (see the module contract)."""
    method, params = _command(verb, session.session_id, objective)
    async with work.commit():  # Muse changes the goal once asked
        try:
            result = await ask(
                host,
                method,
                params,
                msp.GoalCommandResult,
                phase="submitting",
                budget=ctx.config.deadlines.submit,
                refusal=partial(_refusal, verb),
            )
        except _Refused as refused:
            await session.say(refused.message)
            return "end_turn"
        except RpcError as error:
            detail = redact(" ".join(error.message.split()), environ=ctx.environ, limit=500)
            await session.say(f"/goal {verb} failed and the goal may be unchanged: {detail}")
            return "end_turn"
        if result.status == "accepted":
            with anyio.move_on_after(ctx.config.deadlines.submit):
                await wait_first(watch.announced, host.dead)
    lead = _DONE[verb]
    if result.status == "accepted" and not watch.announced.is_set():
        lead += " Muse accepted it but has not announced the new goal yet."
    woken = result.turn_id if result.status == "accepted" else None
    await session.say(f"{lead}\n{_shown(session)}" + (f"\n{_WORKING}\n" if woken else ""))
    if woken is None:
        return "end_turn"
    return await follow_goal_turn(ctx, session, work, host, woken, watch)


def _shown(session: AcpSession) -> str:
    if session.goal is None:
        return "Muse has not announced a goal for this session since muse-acp opened it."
    return goal_text(session.goal.goal)


async def _features(ctx: AgentContext, session: AcpSession) -> HostFeatures:
    """What the running host offers, else what the executable that would run would."""
    host = session.execution.host
    if host is not None and not host.dead.is_set():
        return host.features
    return await ctx.startup.installed()


def _too_old(version: str | None) -> str:
    oldest = first_declaring("goals")
    found = f"this Muse is {clip(version, 40)}" if version else "this Muse's version is not known"
    return (
        f"Goal controls need Muse {oldest} or newer, and {found}, so nothing was changed. "
        "Send /goal to see the goal Muse last announced, or update Muse to set one."
    )


def _command(verb: str, session_id: str, objective: str) -> tuple[str, WireModel]:
    command_id = new_uuid7()
    if verb == "set":
        return "goal/set", msp.GoalSetParams(
            command_id=command_id, session_id=session_id, objective=objective
        )
    if verb == "edit":
        return "goal/edit", msp.GoalEditParams(
            command_id=command_id, session_id=session_id, objective=objective
        )
    models: dict[str, type[msp.GoalPauseParams | msp.GoalResumeParams | msp.GoalClearParams]]
    models = {"pause": msp.GoalPauseParams, "resume": msp.GoalResumeParams}
    model = models.get(verb, msp.GoalClearParams)
    return f"goal/{verb}", model(command_id=command_id, session_id=session_id)


def _refusal(verb: str, error: RpcError) -> RpcError | None:
    data = error.data if isinstance(error.data, dict) else {}
    template = _REFUSALS.get(str(data.get("reason")))
    if template is None:
        return None
    state = "active" if verb == "pause" else "paused"  # edit is never refused for its state
    return _Refused(error.code, template.format(verb=verb, state=state))
