"""Local commands: ``/status``, ``/models``, ``/skills``, ``/rename TITLE``, ``/logout``,
``/compact``, ``/goal``, ``/tasks``, ``/mcp``, ``/workflow`` and the reviews (each command's
logic in its module).

Contract: a local command never starts a model turn, except ``/plan TEXT`` (``plan_mode``) and
the reviews (``review``), which are turns by design. ``recognise`` finds one only when the first
top-level text block of a prompt, trimmed, is ``/<name>`` or ``/<name> <argument>`` for a
built-in name (any case); anything else is ordinary prompt text, skills included. ``run``
answers with one ``agent_message_chunk`` and ``end_turn`` (``cancelled`` when a wait was
cancelled), making a command's change inside the work's ``commit``. Errors: ``/rename`` fails
with ``INVALID_PARAMS`` for an unusable title (``INTERNAL_ERROR`` when it cannot be stored);
every other failure is told in the reply. ``advertise`` sends ``available_commands_update``: the
built-ins, then the Muse skills whose activation is on (best effort).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeVar

from muse_acp import __version__
from muse_acp.agent.announcements.catalog import adopt_catalog, read_catalog, reading_catalog
from muse_acp.agent.announcements.session_state import read_plan_usage
from muse_acp.agent.commands import account
from muse_acp.agent.commands.background_tasks import TASKS_HINT, run_tasks
from muse_acp.agent.commands.compaction import run_compact
from muse_acp.agent.commands.goal import GOAL_HINT, run_goal
from muse_acp.agent.commands.mcp_listing import run_mcp
from muse_acp.agent.commands.plan_mode import run_plan
from muse_acp.agent.commands.review import (
    BRANCH_HINT,
    COMMIT_HINT,
    REVIEW_HINT,
    run_review,
    run_review_branch,
    run_review_commit,
)
from muse_acp.agent.commands.workflow import WORKFLOW_HINT, run_workflow
from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting.skills import (
    MAX_SKILLS_SHOWN,
    SKILL_ID_LIMIT,
    Skill,
    SkillsUnavailable,
    skills_reply,
)
from muse_acp.agent.options.config_options import current_names
from muse_acp.agent.options.safety import CONTROLS
from muse_acp.agent.options.titles import check_user_title
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.status import HostFacts, StatusFacts, status_text
from muse_acp.agent.translation.usage import usage_lines
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.bindings import bindings_for
from muse_acp.host.features import NO_FEATURES, HostFeatures
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp_wire import acp, msp

__all__ = [
    "BUILTINS",
    "Builtin",
    "CommandInvocation",
    "advertise",
    "available_commands",
    "recognise",
    "refusal",
    "run",
]

logger: Final = logging.getLogger("muse_acp.agent")
T = TypeVar("T")

REASON_LIMIT: Final = 500

_COMMAND_LINE: Final = re.compile(r"/([\w-]+)(?:\s+(.*))?", re.DOTALL)

CommandHandler = Callable[
    [AgentContext, AcpSession, SessionWork, "str | None"], Awaitable[acp.StopReason]
]


@dataclass(frozen=True, slots=True)
class CommandInvocation:
    """A built-in command as the user sent it."""

    name: str
    """The built-in's name, in lower case."""
    argument: str | None = None
    """What followed the name, trimmed; None when nothing did."""
    alone: bool = True
    """False when other blocks came with the command; then nothing is run."""

    def __post_init__(self) -> None:
        if self.name not in BUILTINS:
            raise ValueError(f"{self.name!r} is not a built-in command")


def recognise(prompt: Sequence[acp.ContentBlock]) -> CommandInvocation | None:
    """The built-in command the prompt invokes, or None for an ordinary prompt."""
    first = next((block for block in prompt if isinstance(block, acp.TextContentBlock)), None)
    if first is None:
        return None
    match = _COMMAND_LINE.fullmatch(first.text.strip())
    if match is None or match.group(1).lower() not in BUILTINS:
        return None
    return CommandInvocation(match.group(1).lower(), match.group(2), alone=len(prompt) == 1)


def refusal(command: CommandInvocation) -> str | None:
    """The reply for a command that must not run as sent, or None when it may run."""
    name = command.name
    if not command.alone:
        return (
            f"/{name} was not run: local commands only run when sent on their own, and this "
            "message also carried other text or attachments, none of which was acted on. Send "
            f"/{name} by itself, then the rest as a separate message."
        )
    if command.argument is not None and BUILTINS[name].hint is None:
        return f"/{name} takes no argument, so it was not run. Send /{name} by itself."
    return None


async def run(
    ctx: AgentContext, session: AcpSession, work: SessionWork, command: CommandInvocation
) -> acp.StopReason:
    """Run a recognised command for ``work``; no model turn is ever started."""
    refused = refusal(command)
    if refused is not None:
        await _reply(session, refused)
        return "end_turn"
    return await BUILTINS[command.name].handler(ctx, session, work, command.argument)


async def _reply(session: AcpSession, text: str) -> None:
    await session.say(text)


async def _interruptible(work: SessionWork, job: Callable[[], Awaitable[T]]) -> T | None:
    """Run ``job`` where a cancel stops it; None when it was cancelled."""
    outcome: T | None = None
    with work.interruptibly():
        outcome = await job()
    return None if work.cancel_requested else outcome


def _reason(ctx: AgentContext, text: str) -> str:
    return redact(" ".join(text.split()), environ=ctx.environ, limit=REASON_LIMIT)


async def _read_catalog(ctx: AgentContext, session: AcpSession) -> msp.ModelListResult | str:
    """The host's model list, or why it could not be had."""
    try:
        return await read_catalog(ctx, session)
    except RpcError as error:
        return _reason(ctx, error.message)


async def _models(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    async with reading_catalog(ctx):  # a turn elsewhere checks its effort against this list
        outcome = await _interruptible(work, lambda: _read_catalog(ctx, session))
        if outcome is None:
            return "cancelled"
        if isinstance(outcome, str):
            await _reply(session, f"The model menu was not refreshed and is unchanged: {outcome}.")
            return "end_turn"
        async with work.commit():
            await adopt_catalog(ctx, outcome)
    count = len(outcome.models)
    if count == 0:
        text = "Muse lists no models right now. Check that Muse is signed in, then run /models."
    else:
        plural = "model" if count == 1 else "models"
        text = f"Model menu refreshed: Muse lists {count} {plural}. Pick one in the Model setting."
    await _reply(session, text)
    return "end_turn"


async def _host_facts(ctx: AgentContext, session: AcpSession) -> tuple[HostFacts, HostFeatures]:
    """The facts of the running host, else of the executable that would run, and its features."""
    host = session.execution.host
    if host is not None and not host.dead.is_set():
        bindings = host.bindings
        return HostFacts(host.version, True, bindings.version, bindings.exact), host.features
    try:
        binary = await ctx.hosting.muse()
    except HostUnavailable as error:
        return HostFacts(None, False, None, False, problem=error.message), NO_FEATURES
    if binary.version is None:
        return HostFacts(None, False, None, False, problem="its --version names none"), NO_FEATURES
    bindings = bindings_for(binary.version)
    facts = HostFacts(binary.version, False, bindings.version, bindings.exact)
    return facts, ctx.startup.expected(binary)


async def _status(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    host, features = await _host_facts(ctx, session)
    await read_plan_usage(ctx, session)  # usage/changed may not have come: ask
    names = current_names(session.settings, ctx.catalog)
    stored = ctx.negotiated.output and features.has("storedOutput")
    facts = StatusFacts(
        adapter_version=__version__,
        host=host,
        session_id=session.session_id,
        title=session.title,
        cwd=session.cwd,
        mode=names["mode"],
        model=names["model"],
        effort=names["reasoningEffort"],
        context=session.context,
        stored_output=stored,
        usage=tuple(usage_lines(session.tokens, session.plan_usage)),
        safety=tuple(
            (control.name, names[control.id])
            for control in CONTROLS.values()
            if control.id in names
        ),
        mcp_servers=tuple((server.name, server.kind) for server in session.mcp_servers),
    )
    # The facts are the user's and a host's text: secrets (the environment's, the MCP servers')
    # are redacted from them as from any message (a line at a time, each already bounded).
    lines = status_text(facts).split("\n")
    await _reply(session, "\n".join(redact(line, environ=ctx.environ) for line in lines))
    return "end_turn"


async def _skills(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    async def listing() -> str:
        try:
            return skills_reply(await ctx.skills.listing(session.cwd, fresh=True))
        except SkillsUnavailable as error:
            return f"Muse's skills could not be listed: {error}."

    text = await _interruptible(work, listing)
    if text is None:
        return "cancelled"
    await _reply(session, text)
    return "end_turn"


async def _rename(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    title = check_user_title(argument)
    async with work.commit():
        # The write ends with fsync, which must not stall every other session's traffic.
        saved = await ctx.preferences.write_user_title(session.session_id, title)
        session.user_title = saved.user_title
        await session.outlet.send(
            acp.SessionInfoUpdateSessionUpdate(
                session_update="session_info_update",
                title=title,
                updated_at=saved.title_updated_at,
            ),
        )
    note = "muse-acp keeps this title itself; Muse's own session records are unchanged."
    await _reply(session, f"This session is now titled: {title}\n{note}")
    return "end_turn"


async def _logout(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    async with work.commit():  # a withdrawn /logout signs nothing out; a late cancel is ignored
        try:
            await account.run_muse_logout(ctx)
            lines = ["Signed out: `muse logout` removed Muse's stored credentials."]
        except (RpcError, OSError) as error:
            detail = _reason(ctx, error.message if isinstance(error, RpcError) else str(error))
            lines = [f"`muse logout` did not complete ({detail}); stored credentials may remain."]
    key = account.API_KEY_VARIABLE
    if account.api_key_configured(ctx):
        lines.append(
            f"{key} is still exported in the environment muse-acp runs in, so Muse can keep "
            "using it; unset it and restart the agent to sign out completely."
        )
    else:
        lines.append(f"No {key} is exported to muse-acp.")
    lines.append("Every muse-acp session, this one included, was closed; start or load one.")
    await _reply(session, "\n".join(lines))
    return "end_turn"


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in local command: how it is advertised, and what runs it."""

    name: str
    description: str
    hint: str | None
    """The input hint when the command takes an argument; None when it takes none."""
    handler: CommandHandler

    def advertised(self) -> acp.AvailableCommand:
        command = acp.AvailableCommand(name=self.name, description=self.description)
        if self.hint is not None:
            command.input = acp.UnstructuredCommandInput(hint=self.hint)
        return command


BUILTINS: Final[Mapping[str, Builtin]] = MappingProxyType(
    {
        builtin.name: builtin
        for builtin in (
            Builtin("status", "Show versions, settings and context use", None, _status),
            Builtin("models", "Refresh the model menu from Muse", None, _models),
            Builtin("skills", "List Muse's skills for this workspace", None, _skills),
            Builtin("rename", "Give this session a title of your own", "new title", _rename),
            Builtin("logout", "Sign out of Muse and close every session", None, _logout),
            Builtin("review", "Review uncommitted changes, read-only", REVIEW_HINT, run_review),
            Builtin("review-branch", "Review a branch's changes", BRANCH_HINT, run_review_branch),
            Builtin("review-commit", "Review one commit", COMMIT_HINT, run_review_commit),
            Builtin("compact", "Have Muse compact this session's history", None, run_compact),
            Builtin("goal", "Show or change the session goal", GOAL_HINT, run_goal),
            Builtin("tasks", "List or stop Muse's background work", TASKS_HINT, run_tasks),
            Builtin("mcp", "List this session's MCP servers", None, run_mcp),
            Builtin(
                "workflow", "List, retry or skip workflow children", WORKFLOW_HINT, run_workflow
            ),
            Builtin("plan", "Enter plan mode and plan a change", "what to plan", run_plan),
        )
    }
)


def available_commands(skills: Sequence[Skill]) -> list[acp.AvailableCommand]:
    """The built-ins, then each active skill not named like a built-in or an earlier skill."""
    commands = [builtin.advertised() for builtin in BUILTINS.values()]
    taken = set(BUILTINS)
    for skill in skills:
        key = skill.id.lower()
        usable = len(skill.id) <= SKILL_ID_LIMIT and not any(c.isspace() for c in skill.id)
        if skill.activation != "on" or key in taken or not usable:
            continue
        taken.add(key)
        commands.append(
            acp.AvailableCommand(
                name=skill.id,
                description=skill.description or f"Muse {skill.scope or 'workspace'} skill",
                input=acp.UnstructuredCommandInput(hint="what the skill should work on"),
            )
        )
        if len(commands) - len(BUILTINS) >= MAX_SKILLS_SHOWN:
            break
    return commands


async def advertise(ctx: AgentContext, session: AcpSession) -> None:
    """Send the session's ``available_commands_update``; skills are added when Muse lists them."""
    try:
        skills = await ctx.skills.listing(session.cwd)
    except SkillsUnavailable as error:
        logger.info("advertising built-in commands only: %s", error)
        skills = ()
    if session.closed:
        return
    await session.outlet.send(
        acp.AvailableCommandsUpdateSessionUpdate(
            session_update="available_commands_update",
            available_commands=available_commands(skills),
        ),
    )
