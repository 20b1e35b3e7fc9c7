"""Plan mode and ``/plan``: Muse works out a plan without carrying any of it out.

Contract: in the ``plan`` mode (``config_options.MODES``) the session's host runs with
``--disable-write --disable-shell``, whatever the model attempts. Each prompt's turn is led by
Muse's ``bundled:plan`` skill on hosts offering it (``planSkill``), else by
``PLANNING_PREAMBLE`` (``planning_input``). The plan is shown as Muse writes it, as a streamed
agent message (its plans are prose; no plan entries are invented), and to a client that takes
plan operations also as a Markdown plan (``translation.plans``). The mode is left only by an
explicit mode change: nothing here switches it back. ``/plan TEXT`` enters plan mode (stored and
announced inside the prompt's commit, before the turn: not at all when the prompt was withdrawn
first) and plans ``TEXT``; ``/plan`` alone only enters the mode.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.options.config_options import config_options
from muse_acp.agent.options.preferences import SettingsChange
from muse_acp.agent.options.remembered import to_stored
from muse_acp.agent.prompts.model_turn import run_turn
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.plans import PLAN_MODE, PLANNING_PREAMBLE
from muse_acp.agent.turns.work import SessionWork
from muse_acp.rpc import RpcError
from muse_acp_wire import acp, msp

__all__ = ["PLANNING_PREAMBLE", "PLAN_MODE", "PLAN_SKILL", "planning_input", "run_plan"]

logger: Final = logging.getLogger("muse_acp.agent")

PLAN_SKILL: Final = "bundled:plan"


async def planning_input(
    ctx: AgentContext, session: AcpSession, parts: list[msp.TurnInputPart]
) -> list[msp.TurnInputPart]:
    """``parts`` as the turn input of ``session``: led by the plan skill or the planning
    preamble in plan mode, unchanged in any other mode."""
    if session.settings.mode_id != PLAN_MODE:
        return parts
    # An executable that cannot be probed offers nothing: starting the host reports the
    # problem, and the preamble works anywhere.
    lead: msp.TurnInputPart = msp.TextTurnInputPart(type="text", text=PLANNING_PREAMBLE)
    if (await ctx.startup.installed()).has("planSkill"):
        lead = msp.SkillTurnInputPart(type="skill", selector=PLAN_SKILL)
    return [lead, *parts]


async def _enter(ctx: AgentContext, session: AcpSession, work: SessionWork) -> None:
    """Switch the session to plan mode as ``session/set_mode`` would (the prompt that asked
    occupies the session, so this is between turns by construction), inside the work's commit:
    a withdrawn ``/plan`` changes no mode and announces none."""
    if session.settings.mode_id == PLAN_MODE:
        return
    async with work.commit():
        # The host restarts with the read-only flags at the next turn (ExecutionHost.ready).
        before = to_stored(session.settings)
        session.settings = replace(session.settings, mode_id=PLAN_MODE)
        try:
            change = SettingsChange.between(before, to_stored(session.settings))
            await ctx.preferences.write_settings(session.session_id, change)
        except RpcError as error:
            logger.warning("%s", error.message)
            text = f"Plan mode applies now but will not survive a restart: {error.message}"
            await session.tell(Notice("warning", "Plan mode was not stored", text))
        await session.outlet.send(
            acp.CurrentModeUpdateSessionUpdate(
                session_update="current_mode_update", current_mode_id=PLAN_MODE
            )
        )
        await session.outlet.send(
            acp.ConfigOptionUpdateSessionUpdate(
                session_update="config_option_update",
                config_options=config_options(session.settings, ctx.catalog),
            )
        )


async def run_plan(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """``/plan [TEXT]`` (see the module contract)."""
    await _enter(ctx, session, work)
    if argument is None or not argument.strip():
        await session.say(
            "Plan mode is on: Muse can read the workspace but not write files or run commands. "
            "Describe what to plan, or send /plan followed by it. Choose another mode to leave."
        )
        return "end_turn"
    text = msp.TextTurnInputPart(type="text", text=argument.strip())
    return await run_turn(ctx, session, work, await planning_input(ctx, session, [text]))
