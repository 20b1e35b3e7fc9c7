"""``authenticate`` and ``logout``.

Muse owns its credentials: ``authenticate`` only checks that the chosen method can work in this
environment (an exported ``META_API_KEY``, or a terminal ``muse login`` the client has run), and
``logout`` closes every adapter session and host, then runs Muse's public ``muse logout`` (see
``account``). An exported ``META_API_KEY`` cannot be removed by logging out; callers are told so.
"""

from __future__ import annotations

from muse_acp.agent.account import API_KEY_VARIABLE, api_key_configured, run_muse_logout
from muse_acp.agent.context import AgentContext
from muse_acp.redact import redact
from muse_acp.rpc import AUTH_REQUIRED, INVALID_PARAMS, RequestContext, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp

__all__ = ["handle_authenticate", "handle_logout"]


async def handle_authenticate(
    ctx: AgentContext, params: acp.AuthenticateRequest, _: RequestContext
) -> acp.AuthenticateResponse:
    if params.method_id == "meta-api-key":
        if not api_key_configured(ctx):
            raise RpcError(
                AUTH_REQUIRED,
                f"{API_KEY_VARIABLE} is not set in the environment muse-acp runs in; export it "
                "and restart the agent, or sign in with `muse login`",
            )
    elif params.method_id != "muse-login":
        raise RpcError(
            INVALID_PARAMS,
            f"unknown authentication method {redact(clip(params.method_id, 100))!r}; use one from "
            "initialize",
        )
    return acp.AuthenticateResponse()


async def handle_logout(
    ctx: AgentContext, params: acp.LogoutRequest, _: RequestContext
) -> acp.LogoutResponse:
    await run_muse_logout(ctx)
    return acp.LogoutResponse()
