"""``authenticate`` and ``logout``.

Muse owns its credentials; ``authenticate`` checks that the chosen method works, it never signs
in itself. ``muse-account`` is offered to every client; ``muse-login`` (the terminal method)
and ``meta-api-key`` (no longer offered: no ACP schema has its ``env_var`` type) are accepted
too. ``meta-api-key`` first needs ``META_API_KEY`` exported to the agent (-32000 at once
otherwise). Then each method asks Muse which credential it would use (``account.read_account``,
MSP ``account/read`` on a short-lived host of its own; kept for ``readiness``) and answers as
``account.account_meta`` says: success carries ``_meta["muse/account"]`` (the credential's kind
and label, never the credential), no credential is -32000 with how to sign in, and
``meta-api-key`` while Muse uses another credential is -32000 saying what it uses. A host
failure is the mapped one. Where Muse cannot be asked (exec, or no ``account/read``)
``authenticate`` succeeds on the first check alone. ``logout`` closes every session and host,
then runs ``muse logout`` (see ``account``); sign-in is asked again at the next session. An
exported ``META_API_KEY`` cannot be removed by logging out; callers are told so.
"""

from __future__ import annotations

from typing import Final

from muse_acp.agent.commands.account import (
    API_KEY_METHOD,
    API_KEY_VARIABLE,
    account_meta,
    api_key_configured,
    read_account,
    run_muse_logout,
)
from muse_acp.agent.context import AccountCheck, AgentContext
from muse_acp.agent.handshake.capabilities import ACCOUNT_CHECK_METHOD
from muse_acp.redact import redact
from muse_acp.rpc import AUTH_REQUIRED, INVALID_PARAMS, RequestContext, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp

__all__ = ["AUTH_METHODS", "handle_authenticate", "handle_logout"]

AUTH_METHODS: Final = frozenset({ACCOUNT_CHECK_METHOD, "muse-login", API_KEY_METHOD})
"""Every ``authenticate`` method id the agent accepts."""


async def handle_authenticate(
    ctx: AgentContext, params: acp.AuthenticateRequest, _: RequestContext
) -> acp.AuthenticateResponse:
    method = params.method_id
    if method not in AUTH_METHODS:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown authentication method {redact(clip(method, 100))!r}; use one from initialize",
        )
    if method == API_KEY_METHOD and not api_key_configured(ctx):
        raise RpcError(
            AUTH_REQUIRED,
            f"{API_KEY_VARIABLE} is not set in the environment muse-acp runs in; export it "
            "and restart the agent, or sign in with `muse login`",
        )
    if await ctx.on_exec():
        return acp.AuthenticateResponse()
    account = await read_account(ctx)
    ctx.account = AccountCheck(account)
    if account is None:
        return acp.AuthenticateResponse()
    meta = account_meta(method, account)
    return acp.AuthenticateResponse(
        field_meta=meta.model_dump(mode="json", by_alias=True, exclude_none=True)
    )


async def handle_logout(
    ctx: AgentContext, params: acp.LogoutRequest, rctx: RequestContext
) -> acp.LogoutResponse:
    async with rctx.commit():  # nothing to prepare: only a cancel in the same read stops it
        ctx.account = None
        await run_muse_logout(ctx)
    return acp.LogoutResponse()
