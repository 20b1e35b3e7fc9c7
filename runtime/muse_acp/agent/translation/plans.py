"""Plans: Muse's todo list and Plan mode's plan, as each client takes them.

Contract: the translator states every plan in one shape: the todo list as the legacy ``plan``
update (``progress.plan_update``), Plan mode's plan as a Markdown ``plan_update`` named
``PLAN_MODE_PLAN`` (``markdown_plan``: the text of each agent message a Plan mode turn
completes, so the last one is the plan). ``for_client`` alone decides what a client sees of
them: a client that takes plan operations gets the todo list as an ``items`` plan named
``TODO_PLAN`` (``plan_removed`` once Muse empties it) and the Markdown plan; any other client
gets the legacy ``plan`` exactly as before, and no Markdown plan (it has Plan mode's answer as
agent text already). A Plan mode turn is known live from the session's mode and, in history,
from its input as Muse recorded it: led by ``PLANNING_PREAMBLE`` (hosts without Muse's plan
skill; a skill part leaves no trace in Muse's record, so there the plan replays as text only).
"""

from __future__ import annotations

from typing import Final, TypeAlias

from muse_acp_wire import acp

__all__ = [
    "PLANNING_PREAMBLE",
    "PLAN_MODE",
    "PLAN_MODE_PLAN",
    "TODO_PLAN",
    "PlanShape",
    "for_client",
    "led_by_plan_mode",
    "markdown_plan",
]

PLAN_MODE: Final = "plan"
"""The session mode in which Muse works out a plan (``commands.plan_mode``)."""
PLANNING_PREAMBLE: Final = (
    "[Plan mode] Work out a plan for the request below and stop there. Read and search the "
    "workspace as much as you need, but change nothing: writing files and running commands "
    "are switched off for this session. Answer with the plan as numbered steps, each naming "
    "the files it touches, then the risks and open questions."
)
"""Leads each turn in plan mode on a host without Muse's plan skill."""
TODO_PLAN: Final = "muse-todo-list"
"""The ``planId`` of Muse's todo list (a session has one)."""
PLAN_MODE_PLAN: Final = "muse-plan-mode"
"""The ``planId`` of Plan mode's plan (each plan replaces the one before)."""

PlanShape: TypeAlias = acp.PlanSessionUpdate | acp.PlanUpdateSessionUpdate
"""A plan as the translator states it (see the module contract)."""


def markdown_plan(text: str) -> acp.PlanUpdateSessionUpdate:
    """Plan mode's plan, the Markdown ``text`` Muse answered with."""
    return acp.PlanUpdateSessionUpdate(
        session_update="plan_update",
        plan=acp.MarkdownPlanUpdateContent(type="markdown", plan_id=PLAN_MODE_PLAN, content=text),
    )


def led_by_plan_mode(user_text: str) -> bool:
    """Whether a turn whose user message Muse recorded as ``user_text`` ran in Plan mode (as far
    as the record tells: see the module contract)."""
    return user_text.startswith(PLANNING_PREAMBLE)


def for_client(
    update: PlanShape, *, plans: bool
) -> acp.PlanSessionUpdate | acp.PlanUpdateSessionUpdate | acp.PlanRemovedSessionUpdate | None:
    """What a client sees of ``update``: ``plans`` says it takes plan operations (see the module
    contract); None: nothing."""
    if isinstance(update, acp.PlanUpdateSessionUpdate):
        return update if plans else None
    if not plans:
        return update
    if not update.entries:
        return acp.PlanRemovedSessionUpdate(session_update="plan_removed", plan_id=TODO_PLAN)
    return acp.PlanUpdateSessionUpdate(
        session_update="plan_update",
        plan=acp.ItemsPlanUpdateContent(type="items", plan_id=TODO_PLAN, entries=update.entries),
    )
