"""The ACP agent on stdio: where every client frame enters and is routed.

Frames enter through the JSON-RPC runtime (``muse_acp.rpc``) on this process's stdin; stdout
carries protocol frames and nothing else (logs go to stderr), written through ``coalescing`` so
that a burst of updates relayed from one read of host output costs the client one read. Routes
are built from the generated method tables (``AGENT_REQUESTS``/``AGENT_NOTIFICATIONS``), so each
handler receives params already validated into the generated model for its method, and a method
the tables list but this agent does not serve is a test failure, not a silent gap.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any, Final

import anyio

from muse_acp.agent import auth, lifecycle, prompting, settings, steering, stored_output
from muse_acp.agent.capabilities import InitializeParams, initialize_response, negotiate
from muse_acp.agent.context import AgentContext
from muse_acp.agent.prompt_params import PROMPT_PARAMS
from muse_acp.config import AdapterConfig
from muse_acp.host.binary import HostUnavailable
from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    NotificationRoute,
    RequestContext,
    RequestRoute,
    Router,
    coalescing,
    open_stdio,
)
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

logger: Final = logging.getLogger("muse_acp.agent")

RequestHandler = Callable[[AgentContext, Any, RequestContext], Awaitable[WireModel]]
NotificationHandler = Callable[[AgentContext, Any], Awaitable[None]]


async def handle_initialize(
    ctx: AgentContext, params: acp.InitializeRequest, _: RequestContext
) -> acp.InitializeResponse:
    version: str | None = None
    try:
        version = (await ctx.muse()).version
    except HostUnavailable as error:
        # initialize still succeeds so the client can show the problem on first use.
        logger.warning("%s", error.message)
    ctx.negotiated = negotiate(params, version)
    return initialize_response(ctx.negotiated)


REQUEST_HANDLERS: Final[Mapping[str, RequestHandler]] = MappingProxyType(
    {
        "initialize": handle_initialize,
        "authenticate": auth.handle_authenticate,
        "logout": auth.handle_logout,
        "session/new": lifecycle.handle_new,
        "session/load": lifecycle.handle_load,
        "session/list": lifecycle.handle_list,
        "session/resume": lifecycle.handle_resume,
        "session/close": lifecycle.handle_close,
        "session/fork": lifecycle.handle_fork,
        "session/set_mode": settings.handle_set_mode,
        "session/set_config_option": settings.handle_set_config_option,
        "session/prompt": prompting.handle_prompt,
        "_muse/readOutput": stored_output.handle_read_output,
        "_muse/steer": steering.handle_muse_steer,
        "_session/steering": steering.handle_compatible_steering,
    }
)

NOTIFICATION_HANDLERS: Final[Mapping[str, NotificationHandler]] = MappingProxyType(
    {"session/cancel": prompting.handle_cancel}
)


PARAMS_OVERRIDES: Final[Mapping[str, type[WireModel]]] = MappingProxyType(
    {"initialize": InitializeParams, **PROMPT_PARAMS}
)
"""Hand-written refinements of generated params models (each a subclass of the generated one)."""


def build_router(ctx: AgentContext) -> Router:
    """Routes for every handled method, typed by the generated tables."""
    requests = [
        RequestRoute(
            method,
            PARAMS_OVERRIDES.get(method, spec.params),
            partial(REQUEST_HANDLERS[method], ctx),
        )
        for method, spec in acp.AGENT_REQUESTS.items()
        if method in REQUEST_HANDLERS and spec.params is not None
    ]
    notifications = [
        NotificationRoute(method, spec.params, partial(NOTIFICATION_HANDLERS[method], ctx))
        for method, spec in acp.AGENT_NOTIFICATIONS.items()
        if method in NOTIFICATION_HANDLERS and spec.params is not None
    ]
    return Router(requests, notifications)


async def serve(config: AdapterConfig) -> None:
    """Serve ACP on stdin/stdout until the client closes stdin."""
    ctx = AgentContext(config)
    async with (
        open_stdio() as (receive, send),
        coalescing(send) as output,
        anyio.create_task_group() as tasks,
    ):
        connection = Connection(
            FrameReader(receive), FrameWriter(output), build_router(ctx), name="acp"
        )
        ctx.attach(connection, tasks)
        await connection.serve()
        for session in ctx.sessions.open_sessions():
            lifecycle.close_session(session)
        tasks.cancel_scope.cancel()
