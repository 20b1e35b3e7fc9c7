"""What a session needs before ``session/new``, ``session/load`` or ``session/resume`` answers:
a Muse to run it, signed in, and the model menu.

Contract: ``prepare`` raises the executable's ``HostUnavailable`` when there is no usable Muse
(its message says how to install one or point muse-acp at it). On the MSP backend it asks Muse
once per process which credential it uses (``account.read_account_and_models``) and refuses
while Muse has none with -32000 (``failures.signed_out``, ``data.authMethods`` as ``initialize``
advertised them), so the client offers sign-in where it looks for it; the answer is kept
(``AgentContext.account``) until ``authenticate`` or ``logout`` asks again. A check that fails
otherwise (the host does not start or answer) is logged and the session goes on, asked again at
the next one: its first prompt reports the host's failure. The model menu is the catalog the
agent knows, else the one remembered for the executable (``catalog.recall_catalog``, refreshed
once a host runs), else one read now, on the account check's host or the catalog host, within
the read budget (a failure leaves the menu with Muse's default model). The legacy exec backend
asks none of this.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import Final

from muse_acp.agent.announcements.catalog import (
    adopt_catalog,
    list_models,
    reading_catalog,
    recall_catalog,
)
from muse_acp.agent.commands.account import read_account_and_models
from muse_acp.agent.context import AccountCheck, AgentContext
from muse_acp.agent.errors import failures
from muse_acp.agent.handshake.capabilities import advertised_auth_methods
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import msp

__all__ = ["prepare"]

logger: Final = logging.getLogger("muse_acp.agent")


async def prepare(ctx: AgentContext, cwd: str) -> None:
    """Make sure a session in ``cwd`` can be served (see the module contract).

    Raises:
        HostUnavailable: there is no usable Muse executable.
        RpcError: AUTH_REQUIRED while Muse has no credential.
    """
    await ctx.hosting.muse()
    if await ctx.on_exec():
        return
    async with ctx.asking_muse:
        await recall_catalog(ctx)
        if ctx.account is None:
            models = ctx.catalog is None
            async with reading_catalog(ctx) if models else nullcontext():
                await _check_account(ctx, models=models)
        if ctx.catalog is None:
            async with reading_catalog(ctx):
                await _read_models(ctx, cwd)
    if ctx.account is not None and ctx.account.signed_out:
        refused = failures.signed_out()
        data = dict(refused.data) if isinstance(refused.data, dict) else {}
        methods: list[JsonValue] = list(advertised_auth_methods(ctx.negotiated))
        data["authMethods"] = methods
        raise RpcError(refused.code, refused.message, data)


async def _check_account(ctx: AgentContext, *, models: bool) -> None:
    try:
        account, listed = await read_account_and_models(ctx, models=models)
    except RpcError as error:
        logger.warning("could not ask Muse whether it is signed in: %s", error.message)
        return
    ctx.account = AccountCheck(account)
    if listed is not None and ctx.catalog is None:
        await _adopt(ctx, listed)


async def _read_models(ctx: AgentContext, cwd: str) -> None:
    try:
        async with ctx.catalog_host(cwd) as host:
            listed = await list_models(host, ctx.config.deadlines.read)
    except RpcError as error:
        logger.info("the model menu offers Muse's default model for now: %s", error.message)
        return
    if ctx.catalog is None:
        await _adopt(ctx, listed)


async def _adopt(ctx: AgentContext, listed: msp.ModelListResult) -> None:
    try:
        await adopt_catalog(ctx, listed)
    except ConnectionClosed:
        logger.debug("the client left before the model menu could be announced")
