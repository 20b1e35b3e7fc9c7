"""The ACP agent on stdio: where every client frame enters and is routed.

Contract: frames enter through the JSON-RPC runtime (``muse_acp.rpc``) on stdin; stdout carries
protocol frames and nothing else, written through ``coalescing``. Every request and notification
is served by the handler tables of ``routes``, bound to the connection's ``AgentContext``. The
answer to ``initialize`` comes first, never waiting on the Muse executable (``serve`` may be given
it answered before the event loop, ``handshake.early``): the rest (``routes``) loads right after
it, or at once when another frame arrives earlier, so frames are still served in arrival order;
every other request first waits (bounded by the probes' own limits) until
the executable's probe has settled the negotiation (``Startup.settle``). The agent stops in
order on end of input, SIGTERM, SIGHUP or SIGINT: sessions close, every host's process group is
terminated and reaped before ``serve`` returns, and further signals do not cut that short (it
would leave settings overlays and staged images on disk).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator
from functools import partial
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from muse_acp.agent.handshake.capabilities import InitializeParams
from muse_acp.agent.handshake.early import Opening
from muse_acp.agent.handshake.startup import Startup, answer_initialize
from muse_acp.config import AdapterConfig
from muse_acp.loading import end_loading
from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    RequestContext,
    RequestRoute,
    Router,
    coalescing,
    open_stdio,
)
from muse_acp.rpc.coalescing import CoalescingSendStream
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.rpc.request_context import EarlyStart, Result
from muse_acp_wire import acp_handshake as acp

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext

__all__ = ["STOP_SIGNALS", "AgentHandler", "serve", "serve_streams"]

logger: Final = logging.getLogger("muse_acp.agent")

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""Signals that stop the agent the way the end of stdin does (Ctrl-C included: a person who
started it in a terminal stops it in order too)."""


class AgentHandler:
    """The connection's ``MessageHandler``: ``initialize`` from ``Startup`` alone until the
    agent is loaded, everything through ``routes`` after (see the module contract)."""

    def __init__(self, startup: Startup, output: CoalescingSendStream, tasks: TaskGroup) -> None:
        self._startup = startup
        self._output = output
        self._tasks = tasks
        self._connection: Connection | None = None
        self._context: AgentContext | None = None
        self._router: Router | None = None
        self._first = Router([RequestRoute("initialize", InitializeParams, self._initialize)])
        self._early: EarlyStart | None = None

    def attach(self, connection: Connection) -> None:
        self._connection = connection

    @property
    def context(self) -> AgentContext | None:
        """The agent's context once loaded (None before)."""
        return self._context

    def _loaded(self) -> Router:
        """The agent's routes, loading the agent first if it is not yet."""
        if self._router is None:
            assert self._connection is not None, "attach the connection first"
            # Deferred on purpose (see the module contract): these imports are most of the
            # agent's start-up cost, and initialize does not need them.
            from muse_acp.agent.context import AgentContext
            from muse_acp.agent.prompts.early_prompt import start_early
            from muse_acp.agent.routes import build_router

            context = AgentContext(self._startup.config, startup=self._startup)
            context.attach(self._connection, self._tasks)
            self._context, self._router = context, build_router(context)
            self._early = partial(start_early, context)
            end_loading()
        return self._router

    async def _initialize(
        self, params: InitializeParams, request: RequestContext
    ) -> acp.InitializeResponse:
        request.after_response(self.load_after_answer)
        return await answer_initialize(self._startup, params)

    async def load_after_answer(self) -> None:
        """Load the agent once the ``initialize`` answer has been written."""
        try:
            await self._output.flush()  # the answer first, then the loading
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the client is gone: nothing will need the agent
        self._loaded()

    def early_start(self, method: str, params: JsonValue, ctx: RequestContext) -> None:
        """The connection's ``EarlyStart``: once the agent is loaded, a prompt's turn may start
        as the prompt is read (``prompts.early_prompt``)."""
        if self._early is not None:
            self._early(method, params, ctx)

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        if self._router is None and method == "initialize":
            return await self._first.handle_request(method, params, ctx)
        if method != "initialize":
            # What depends on the executable is settled before any of it is used.
            await self._startup.settle()
        return await self._loaded().handle_request(method, params, ctx)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        await self._loaded().handle_notification(method, params)


async def _stop_on_signal(connection: Connection, signals: AsyncIterator[int]) -> None:
    stopping = False
    async for signum in signals:
        name = signal.Signals(signum).name
        if stopping:
            logger.warning("received %s while stopping; finishing the stop first", name)
            continue
        logger.info("received %s; stopping", name)
        stopping = True
        await connection.aclose()


async def _probe_early(startup: Startup) -> None:
    """Probe the Muse executable from the start, beside ``initialize`` (which never waits for
    it), so the client's next request finds it settled (``Startup.settle``)."""
    await startup.settle()


async def serve(config: AdapterConfig, opening: Opening | None = None) -> None:
    """Serve ACP on stdin/stdout until the client closes stdin or the agent is signalled;
    ``opening``: what was read of stdin, and answered, before the event loop ran."""
    opening = opening or Opening()
    startup = Startup(config)
    answered = opening.answered
    if answered is not None:
        startup.adopt(answered.params, answered.negotiated)
    # Caught until every host was reaped, not only until the first one comes (see the module
    # contract): leaving this block gives the signals their default action back.
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with open_stdio() as (receive, send):
            await serve_streams(
                startup, opening.stream(receive), send, signals, answered=answered is not None
            )


async def serve_streams(
    startup: Startup,
    receive: ByteReceiveStream,
    send: ByteSendStream,
    signals: AsyncIterator[int] | None = None,
    *,
    answered: bool = False,
) -> None:
    """Serve one client over ``receive`` and ``send`` until ``receive`` ends or a signal of
    ``signals`` comes; every host is reaped before it returns; ``answered``: ``initialize`` was
    answered already, so the agent loads at once. ``serve`` is this over stdio; the tests'
    in-process tier is this over pipes of one process."""
    async with coalescing(send) as output, anyio.create_task_group() as tasks:
        handler = AgentHandler(startup, output, tasks)
        tracer = startup.tracer
        connection = Connection(
            FrameReader(receive),
            FrameWriter(output),
            handler,
            name="acp",
            on_frame=tracer.acp if tracer is not None else None,
            early_start=handler.early_start,
        )
        handler.attach(connection)
        if tracer is not None:
            tasks.start_soon(tracer.run)
        if signals is not None:
            tasks.start_soon(_stop_on_signal, connection, signals)
        tasks.start_soon(_probe_early, startup)
        if answered:
            tasks.start_soon(handler.load_after_answer)
        await connection.serve()
        ctx = handler.context
        if ctx is not None:
            for session in ctx.sessions.open_sessions():
                session.close()
            ctx.close_catalog_host()
        tasks.cancel_scope.cancel()
