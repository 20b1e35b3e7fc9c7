"""Muse's model catalog: read without being asked, and announced to every open session.

Contract: ``read_catalog`` asks for ``model/list`` within the read budget, on the session's
running execution host (held for the read) or the agent's catalog host, raising the mapped host
failure. ``adopt_catalog`` makes a list the agent's catalog, remembers it for the executable's
next start when it changed (``host.executable_memory``) and announces each session's changed
options, after ``fit_session_effort`` dropped (stored, told) an effort its model does not offer.
``recall_catalog`` takes the one remembered from an earlier start, ``stale`` until listed again.
Each read that may adopt its list (``/models``, before a session opens, ``refresh_menu``) runs
under ``reading_catalog`` until adopted. ``refresh_menu`` reads and adopts it, when none is known
or it is stale and no read is under way, after a load or resume or through ``read_soon``; before
a turn sending an effort, ``catalog_for_turn`` does, or waits for the reads under way within the
read budget, and ``check_turn_effort`` drops an effort the model lacks (or tells that none could
check it). ``fall_back_model`` puts a session back on the model Muse last accepted, after a
refusal; ``store_dropped_effort`` stores a drop found as a session's records were restored."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, Final

import anyio
from pydantic import ValidationError

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.handshake.startup import RECALL_BUDGET
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.options.config_options import (
    DEFAULT_VALUE,
    EFFORTS,
    ModelCatalog,
    SessionSettings,
    config_options,
    fit_effort,
    turn_effort,
)
from muse_acp.agent.options.preferences import SettingsChange
from muse_acp.agent.options.remembered import to_stored
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.host.client import MspHost
from muse_acp.host.executable_memory import memory_dir, recall, remember_catalog
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import acp, msp

__all__ = [
    "adopt_catalog",
    "catalog_for_turn",
    "check_turn_effort",
    "fall_back_model",
    "fit_session_effort",
    "list_models",
    "read_catalog",
    "read_soon",
    "reading_catalog",
    "recall_catalog",
    "refresh_menu",
    "store_dropped_effort",
]

logger: Final = logging.getLogger("muse_acp.agent")


async def read_catalog(ctx: AgentContext, session: AcpSession) -> msp.ModelListResult:
    """The host's model list (see the module contract).

    Raises:
        RpcError: the mapped failure of the host that was asked.
    """
    budget = ctx.config.deadlines.read
    host = session.execution.host
    if host is not None and not host.dead.is_set():
        async with session.execution.holding(host):
            return await list_models(host, budget, session.session_id)
    async with ctx.catalog_host(session.cwd) as reader:
        return await list_models(reader, budget)


async def list_models(
    host: MspHost, budget: float, session_id: str | None = None
) -> msp.ModelListResult:
    """Muse's ``model/list`` on ``host`` (for ``session_id``, when given) within ``budget``.

    Raises:
        RpcError: the mapped failure of the ``reading`` phase.
    """
    params = msp.ModelListParams(session_id=session_id)
    return await ask(
        host, "model/list", params, msp.ModelListResult, phase="reading", budget=budget
    )


async def adopt_catalog(ctx: AgentContext, result: msp.ModelListResult) -> None:
    """Make ``result`` the agent's catalog, fit each open session's effort to it, and announce
    the menus it changed."""
    sessions = ctx.sessions.open_sessions()
    before = [config_options(session.settings, ctx.catalog) for session in sessions]
    previous = ctx.catalog
    ctx.catalog, ctx.catalog_stale = ModelCatalog.from_result(result), False
    if ctx.catalog != previous:  # what is remembered already needs no rewrite
        await _remember(ctx, result.model_dump(mode="json", by_alias=True))
    for session, options in zip(sessions, before, strict=True):
        if not session.closed:
            await fit_session_effort(ctx, session)
        after = config_options(session.settings, ctx.catalog)
        if after != options and not session.closed:
            await session.outlet.send(
                acp.ConfigOptionUpdateSessionUpdate(
                    session_update="config_option_update", config_options=after
                ),
            )


async def _remember(ctx: AgentContext, catalog: dict[str, Any]) -> None:
    binary = ctx.hosting.probed
    if binary is None:
        return
    folder = memory_dir(ctx.config.data_dir)
    try:
        with anyio.fail_after(RECALL_BUDGET):
            await anyio.to_thread.run_sync(
                remember_catalog, folder, binary.path, catalog, abandon_on_cancel=True
            )
    except (OSError, TimeoutError) as error:
        logger.info("could not remember Muse's model catalog: %s", error)


async def recall_catalog(ctx: AgentContext) -> None:
    """Take the catalog remembered for the executable as the agent's, stale, when none is known
    (nothing when none is remembered, or it cannot be read within ``RECALL_BUDGET``)."""
    binary = ctx.hosting.probed
    if ctx.catalog is not None or binary is None:
        return
    folder = memory_dir(ctx.config.data_dir)
    try:
        with anyio.fail_after(RECALL_BUDGET):
            found = await anyio.to_thread.run_sync(
                recall, folder, binary.path, abandon_on_cancel=True
            )
        if found.catalog is None or ctx.catalog is not None:
            return
        catalog = ModelCatalog.from_result(msp.ModelListResult.model_validate(found.catalog))
    except (TimeoutError, ValidationError) as error:
        logger.info("the remembered model catalog is not used: %s", error)
        return
    ctx.catalog, ctx.catalog_stale = catalog, True


def _wanted(ctx: AgentContext) -> bool:
    """A read of the catalog would tell something new, and none is under way."""
    return (ctx.catalog is None or ctx.catalog_stale) and ctx.catalog_reading is None


@asynccontextmanager
async def reading_catalog(ctx: AgentContext) -> AsyncIterator[None]:
    """A read of the catalog, with the adoption of its list, is under way for the block:
    ``ctx.catalog_reading`` is set once every read that overlaps it has ended, however it
    ends, so a turn waits for all of them (``catalog_for_turn``)."""
    if ctx.catalog_reading is None:
        ctx.catalog_reading = anyio.Event()
    reading = ctx.catalog_reading
    ctx.catalog_readers += 1
    try:
        yield
    finally:
        ctx.catalog_readers -= 1
        if ctx.catalog_readers == 0:
            ctx.catalog_reading = None
            reading.set()


async def refresh_menu(ctx: AgentContext, session: AcpSession) -> None:
    """Read the catalog and announce it, unless it is known and fresh or being read already; a
    failure is logged and the menu keeps what it has (see the module contract)."""
    if not _wanted(ctx):
        return
    try:
        async with reading_catalog(ctx):
            outcome = await read_catalog(ctx, session)
            if ctx.catalog is None or ctx.catalog_stale:  # a /models first has the newer list
                await adopt_catalog(ctx, outcome)
    except RpcError as error:
        logger.info("the model menu keeps the current model for now: %s", error.message)
    except ConnectionClosed:
        logger.debug("the client left before the model menu could be announced")


async def catalog_for_turn(ctx: AgentContext, session: AcpSession) -> None:
    """Before a turn that would send an effort: the catalog as fresh as a read makes it, by
    ``refresh_menu``, or by waiting for the reads under way, within the read budget (past it,
    the turn goes on with what is known; ``check_turn_effort`` says so)."""
    reading = ctx.catalog_reading
    if reading is None:
        await refresh_menu(ctx, session)
        return
    with anyio.move_on_after(ctx.config.deadlines.read) as waited:
        await reading.wait()
    if waited.cancelled_caught:
        logger.info("Muse's model list was not read in time to check the reasoning effort")


def read_soon(ctx: AgentContext, session: AcpSession) -> None:
    """``refresh_menu`` in the agent's task group, when there is anything to read."""
    if _wanted(ctx):
        ctx.hosting.tasks.start_soon(refresh_menu, ctx, session)


async def fit_session_effort(
    ctx: AgentContext, session: AcpSession, *, announce: bool = False
) -> None:
    """Drop a reasoning effort the session's model does not offer (``fit_effort``), store that
    and tell the user; with ``announce``, send the options too."""
    fitted, dropped = fit_effort(session.settings, ctx.catalog)
    if dropped is None:
        return
    change = SettingsChange.between(to_stored(session.settings), to_stored(fitted))
    session.settings = fitted
    try:
        await ctx.preferences.write_settings(session.session_id, change)
    except RpcError as error:
        logger.warning("%s", error.message)
    await session.tell(dropped.notice())
    if announce:
        await _announce(ctx, session)


async def check_turn_effort(ctx: AgentContext, session: AcpSession) -> None:
    """Before a turn, after ``catalog_for_turn``: drop an effort the model lacks as
    ``fit_session_effort`` does (announced), and tell the user when the effort goes out checked
    against no list Muse gave this start (none could be read in time, or only a remembered one
    is known)."""
    await fit_session_effort(ctx, session, announce=True)
    effort = turn_effort(session.settings)
    if effort is None or (ctx.catalog is not None and not ctx.catalog_stale):
        return
    against = (
        "without checking that the model offers it"
        if ctx.catalog is None
        else "checked only against the model list remembered from an earlier start"
    )
    text = (
        f"Muse's model list could not be read before this turn, so the reasoning effort "
        f"{EFFORTS[effort]} is sent {against}. Run /models to read the list again."
    )
    await session.tell(Notice("warning", "Reasoning effort not checked", text))


async def store_dropped_effort(
    ctx: AgentContext, session_id: str, stored: str | None, settings: SessionSettings
) -> None:
    """Store the drop of an effort the session's model lacks, found as its records were restored
    (``remembered.restored``, ``settings``), as ``fit_session_effort`` stores one found later;
    an effort this version does not know is kept for the version that wrote it."""
    if stored is None or stored not in EFFORTS or stored == DEFAULT_VALUE or settings.effort:
        return
    change = SettingsChange.between(
        to_stored(replace(settings, effort=stored)), to_stored(settings)
    )
    try:
        await ctx.preferences.write_settings(session_id, change)
    except RpcError as error:
        logger.warning("%s", error.message)


async def fall_back_model(ctx: AgentContext, session: AcpSession) -> None:
    """After Muse refused the session's model at the start of a turn: go back to the model it
    last accepted, store that, and show it in the menu."""
    before = to_stored(session.settings)
    session.settings = replace(session.settings, model=session.execution.confirmed_model)
    try:
        change = SettingsChange.between(before, to_stored(session.settings))
        await ctx.preferences.write_settings(session.session_id, change)
    except RpcError as error:
        logger.warning("%s", error.message)
    await _announce(ctx, session)


async def _announce(ctx: AgentContext, session: AcpSession) -> None:
    await session.outlet.send(
        acp.ConfigOptionUpdateSessionUpdate(
            session_update="config_option_update",
            config_options=config_options(session.settings, ctx.catalog),
        ),
    )
