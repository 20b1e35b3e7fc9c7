"""Muse's account as the agent reaches it: whether an API key is exported, and signing out.

Muse owns its credentials. ``api_key_configured`` says whether ``META_API_KEY`` is exported to
the agent; ``run_muse_logout`` closes every session of the agent (and their hosts, and the
catalog host) first, so nothing keeps using the credentials, then runs Muse's public
``muse logout`` within ``LOGOUT_TIMEOUT``. An exported key cannot be removed by logging out.
"""

from __future__ import annotations

import subprocess
from typing import Final

import anyio

from muse_acp.agent.context import AgentContext
from muse_acp.rpc import INTERNAL_ERROR, RpcError

__all__ = ["API_KEY_VARIABLE", "LOGOUT_TIMEOUT", "api_key_configured", "run_muse_logout"]

API_KEY_VARIABLE: Final = "META_API_KEY"
LOGOUT_TIMEOUT: Final = 30.0


def api_key_configured(ctx: AgentContext) -> bool:
    return bool(ctx.environ.get(API_KEY_VARIABLE, "").strip())


async def run_muse_logout(ctx: AgentContext) -> None:
    """Close every session and host of this agent, then run ``muse logout``.

    Raises:
        RpcError: ``muse logout`` failed or did not finish in time (sessions are closed).
        HostUnavailable: there is no usable Muse executable.
    """
    for session in ctx.sessions.open_sessions():
        session.close()
    ctx.close_catalog_host()
    binary = await ctx.hosting.muse()
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
