"""The ACP agent on stdio: where every client frame enters and is routed.

Frames enter through the JSON-RPC runtime (``muse_acp.rpc``) on this process's stdin; stdout
carries protocol frames and nothing else (logs go to stderr), written through ``coalescing`` so
that a burst of updates relayed from one read of host output costs the client one read.

``REQUESTS`` and ``NOTIFICATIONS`` are the frozen, typed handler tables: each binding names its
method, the params model the router validates into (the generated table's model, or a
hand-written refinement of it) and the handler, whose params type mypy checks against that
model. A method the generated tables list but this agent does not serve is a test failure, not
a silent gap.

The agent stops in order however it is asked to (stdin reaching its end, SIGTERM, SIGHUP or SIGINT):
the connection stops reading, every session is closed (its turn cancelled, its hosts asked to
stop), and the agent's task group, which runs every host, is cancelled: each host's process
group is terminated, then killed, and reaped before ``serve`` returns.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Generic, TypeVar

import anyio

from muse_acp.agent import (
    auth,
    deletion,
    lifecycle,
    listing,
    prompt_params,
    prompting,
    settings,
    steering,
    stored_output,
    task_control,
)
from muse_acp.agent.capabilities import InitializeParams, initialize_response, negotiate
from muse_acp.agent.context import AgentContext
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

__all__ = [
    "NOTIFICATIONS",
    "REQUESTS",
    "STOP_SIGNALS",
    "NotificationBinding",
    "RequestBinding",
    "build_router",
    "handle_initialize",
    "serve",
]

logger: Final = logging.getLogger("muse_acp.agent")

P = TypeVar("P", bound=WireModel)

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""Signals that stop the agent the way the end of stdin does (Ctrl-C included: a person who
started it in a terminal stops it in order too)."""


@dataclass(frozen=True, slots=True)
class RequestBinding(Generic[P]):
    """A request method, the params model it is validated into, and its handler."""

    method: str
    params: type[P]
    handler: Callable[[AgentContext, P, RequestContext], Awaitable[WireModel]]

    def route(self, ctx: AgentContext) -> RequestRoute[P]:
        return RequestRoute(self.method, self.params, partial(self.handler, ctx))


@dataclass(frozen=True, slots=True)
class NotificationBinding(Generic[P]):
    """A notification method, its params model, and its handler."""

    method: str
    params: type[P]
    handler: Callable[[AgentContext, P], Awaitable[None]]

    def route(self, ctx: AgentContext) -> NotificationRoute[P]:
        return NotificationRoute(self.method, self.params, partial(self.handler, ctx))


async def handle_initialize(
    ctx: AgentContext, params: InitializeParams, _: RequestContext
) -> acp.InitializeResponse:
    version: str | None = None
    backend: acp.MuseBackendReport | None = None
    try:
        choice = await ctx.backend()
        version, backend = choice.binary.version, choice.report()
    except HostUnavailable as error:
        # initialize still succeeds so the client can show the problem on first use.
        logger.warning("%s", error.message)
        if ctx.config.backend == "exec":
            backend = acp.MuseBackendReport(
                backend="exec", reason="exec was chosen with --backend or MUSE_ACP_BACKEND"
            )
    ctx.negotiated = negotiate(params, version, backend, trust_newer=ctx.config.trust_newer_host)
    return initialize_response(ctx.negotiated, backend)


REQUESTS: Final[tuple[RequestBinding[Any], ...]] = (
    RequestBinding("initialize", InitializeParams, handle_initialize),
    RequestBinding("authenticate", acp.AuthenticateRequest, auth.handle_authenticate),
    RequestBinding("logout", acp.LogoutRequest, auth.handle_logout),
    RequestBinding("session/new", acp.NewSessionRequest, lifecycle.handle_new),
    RequestBinding("session/load", acp.LoadSessionRequest, lifecycle.handle_load),
    RequestBinding("session/list", acp.ListSessionsRequest, listing.handle_list),
    RequestBinding("session/resume", acp.ResumeSessionRequest, lifecycle.handle_resume),
    RequestBinding("session/close", acp.CloseSessionRequest, lifecycle.handle_close),
    RequestBinding("session/delete", acp.DeleteSessionRequest, deletion.handle_delete),
    RequestBinding("session/fork", acp.ForkSessionRequest, lifecycle.handle_fork),
    RequestBinding("session/set_mode", acp.SetSessionModeRequest, settings.handle_set_mode),
    RequestBinding(
        "session/set_config_option",
        acp.SetSessionConfigOptionRequest,
        settings.handle_set_config_option,
    ),
    RequestBinding("session/prompt", prompt_params.PromptRequest, prompting.handle_prompt),
    RequestBinding("_muse/readOutput", acp.MuseReadOutputRequest, stored_output.handle_read_output),
    RequestBinding("_muse/steer", prompt_params.MuseSteerRequest, steering.handle_muse_steer),
    RequestBinding("_muse/task", acp.MuseTaskRequest, task_control.handle_task),
    RequestBinding(
        "_session/steering",
        prompt_params.SessionSteeringRequest,
        steering.handle_compatible_steering,
    ),
)
"""Every request the agent serves (see the module contract)."""

NOTIFICATIONS: Final[tuple[NotificationBinding[Any], ...]] = (
    NotificationBinding("session/cancel", acp.CancelNotification, prompting.handle_cancel),
)
"""Every notification the agent handles."""


def build_router(ctx: AgentContext) -> Router:
    """Routes for every handled method, typed by the bindings."""
    return Router(
        [binding.route(ctx) for binding in REQUESTS],
        [binding.route(ctx) for binding in NOTIFICATIONS],
    )


async def _stop_on_signal(connection: Connection) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            logger.info("received %s; stopping", signal.Signals(signum).name)
            await connection.aclose()
            return


async def _probe_early(ctx: AgentContext) -> None:
    """Probe the Muse executable while the client is still starting, so ``initialize`` (which
    needs the backend and version) finds the answer ready; a problem is reported there."""
    try:
        await ctx.backend()
    except HostUnavailable:
        return


async def serve(config: AdapterConfig) -> None:
    """Serve ACP on stdin/stdout until the client closes stdin or the agent is signalled."""
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
        tasks.start_soon(_stop_on_signal, connection)
        tasks.start_soon(_probe_early, ctx)
        await connection.serve()
        for session in ctx.sessions.open_sessions():
            session.close()
        ctx.close_catalog_host()
        tasks.cancel_scope.cancel()
