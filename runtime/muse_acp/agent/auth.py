"""``authenticate`` and ``logout``.

Muse owns its credentials: ``authenticate`` only checks that the chosen method can work in this
environment (an exported ``META_API_KEY``, or a terminal ``muse login`` the client has run), and
``logout`` runs Muse's public ``muse logout``, then closes every adapter session and host. An
exported ``META_API_KEY`` cannot be removed by logging out; callers are told so.
"""

from __future__ import annotations

import logging
import subprocess
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.agent.lifecycle import close_session
from muse_acp.redact import clip
from muse_acp.rpc import AUTH_REQUIRED, INTERNAL_ERROR, INVALID_PARAMS, RequestContext, RpcError
from muse_acp_wire import acp

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext

logger: Final = logging.getLogger("muse_acp.agent")

API_KEY_VARIABLE: Final = "META_API_KEY"
LOGOUT_TIMEOUT: Final = 30.0


def api_key_configured(ctx: AgentContext) -> bool:
    return bool(ctx.environ.get(API_KEY_VARIABLE, "").strip())


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
            f"unknown authentication method {clip(params.method_id, 100)!r}; use one from "
            "initialize",
        )
    return acp.AuthenticateResponse()


async def run_muse_logout(ctx: AgentContext) -> None:
    """Run ``muse logout`` and close every session and host of this agent."""
    for session in ctx.sessions.open_sessions():
        close_session(session)
    binary = await ctx.muse()
    try:
        with anyio.fail_after(LOGOUT_TIMEOUT):
            result = await anyio.run_process(
                [binary.path, "logout"],
                stdin=subprocess.DEVNULL,
                env=dict(ctx.environ),
                check=False,
            )
    except TimeoutError:
        raise RpcError(INTERNAL_ERROR, "`muse logout` did not finish in time") from None
    if result.returncode != 0:
        raise RpcError(
            INTERNAL_ERROR,
            f"`muse logout` failed with exit code {result.returncode}; sessions were closed",
        )


async def handle_logout(
    ctx: AgentContext, params: acp.LogoutRequest, _: RequestContext
) -> acp.LogoutResponse:
    await run_muse_logout(ctx)
    return acp.LogoutResponse()
