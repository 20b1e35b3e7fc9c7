"""An MSP client connection to one ``muse serve`` process (``open_host``).

Contract: ``open_host`` spawns the process, performs the ``initialize``/``initialized`` handshake
within the startup budget and yields an ``MspHost``. Host events are parsed (``bindings``) and
handed in arrival order to the listener registered for their ``sessionId`` (``listen``, whose
``Listening`` handle alone removes it), else to a ``follow``-er, else dropped; ``usage/changed``
goes to every listener. The ``event_lane`` hands a listened session's events over on a short way,
its deltas to the listener's taker when it has one. Approval and
question requests get an empty receipt at once and reach the listener like their notification
twins (``asks``; an unreadable one as ``UnreadableAsk``); any other server request is refused and
reported as an ``UnansweredRequest``. Listeners run inline in the read loop, so they must not
wait on a later frame of the same host.

Errors: ``TimeoutError`` when a budget runs out, ``ConnectionClosed`` when the host goes away,
``RpcError`` carrying the host's own error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from types import MappingProxyType
from typing import Final, TypeVar

import anyio

from muse_acp import __version__
from muse_acp.host.asks import ASK_METHODS, AskParams, read_ask
from muse_acp.host.bindings import Bindings, bindings_for
from muse_acp.host.event_lane import SESSION_EVENTS, DeltaTaker, EventLane, EventListener
from muse_acp.host.features import HostFeatures, features_of
from muse_acp.host.launch import SUBPROCESSES, HostProcess, Launcher
from muse_acp.host.unanswered import RefusingUnknown
from muse_acp.rpc import (
    Connection,
    ConnectionClosed,
    FrameObserver,
    FrameReader,
    FrameWriter,
    NotificationRoute,
    OutgoingRequest,
    RawJson,
    RequestContext,
    RequestRoute,
    Router,
    call,
    call_forwarding,
    typed_result,
)
from muse_acp.tasks import task_group, wait_first
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = [
    "EXIT_STATUS_WAIT",
    "HOST_WIDE_EVENTS",
    "MAX_HOST_FRAME_BYTES",
    "EventListener",
    "HostEnded",
    "Listening",
    "MspHost",
    "open_host",
]

logger: Final = logging.getLogger("muse_acp.host")

R = TypeVar("R", bound=WireModel)

MAX_HOST_FRAME_BYTES: Final = 16 * 1024 * 1024
"""Hosts cap their own frames at 10 MiB; anything larger is refused and reported."""

CLIENT_NAME: Final = "muse_acp"
EXIT_STATUS_WAIT: Final = 2.0
"""Seconds to wait for a host's exit status after it closed its output during startup."""

HOST_WIDE_EVENTS: Final = frozenset({"usage/changed"})
"""Notifications without a session that every listener is given (subscription usage)."""

# Server requests are answered with a receipt and delivered as these notifications.
_REQUEST_TWINS: Final[Mapping[str, str]] = MappingProxyType(
    {"approval/request": "approval/requested", "userInput/request": "userInput/requested"}
)


class HostEnded(ConnectionClosed):
    """The host process ended before its handshake finished; carries how it ended."""

    def __init__(self, exit_code: int | None, stderr_tail: str) -> None:
        super().__init__(f"the Muse host ended during startup (exit code {exit_code})")
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class Listening:
    """One registration of a listener for one session's events; ``close`` ends it."""

    __slots__ = ("_host", "listener", "session_id")

    def __init__(self, host: MspHost, session_id: str, listener: EventListener) -> None:
        self._host = host
        self.session_id = session_id
        self.listener = listener

    def close(self) -> None:
        """Stop delivering to this listener (idempotent; a newer registration stays)."""
        self._host._forget(self)


def _nothing() -> None:
    """What ``on_death`` returns for a host already gone: nothing to forget."""


def _payload(params: WireModel | None) -> RawJson | None:
    """Params as sent: members left as None are omitted rather than sent as ``null`` (MSP
    params never need an explicit null, and hosts treat a missing member as "not given")."""
    if params is None:
        return None
    # The core serializer writes bytes (``model_dump_json`` decodes them, to be encoded again),
    # compact, with every line break escaped: ``RawJson``'s scan for one would find none.
    serializer = params.__pydantic_serializer__
    return RawJson.encoded(
        serializer.to_json(params, by_alias=True, exclude_unset=True, exclude_none=True)
    )


class MspHost:
    """A connected, initialized Muse host; what it offers is decided once, from the version its
    handshake reported (``features``, see ``host.features``)."""

    def __init__(
        self,
        process: HostProcess,
        info: msp.InitializeResult,
        lane: EventLane | None = None,
        *,
        trust_newer: bool = False,
    ) -> None:
        self.process = process
        self.info = info
        self._lane = lane
        fingerprint = info.schema_.fingerprint
        self.bindings: Bindings = bindings_for(info.server_info.version, fingerprint)
        self.features: HostFeatures = features_of(
            info.server_info.version,
            trust_newer=trust_newer,
            granted=frozenset(info.granted_capabilities or ()),
            fingerprint=fingerprint,
        )
        self.connection: Connection | None = None
        self.dead = anyio.Event()
        """Set once the host is found gone (``mark_dead``)."""
        self._on_death: list[Callable[[], None]] = []
        self._listeners: dict[str, Listening] = {}
        self._followers: dict[str, EventListener] = {}

    @property
    def version(self) -> str:
        return self.info.server_info.version

    def listen(
        self, session_id: str, listener: EventListener, deltas: DeltaTaker | None = None
    ) -> Listening:
        """Deliver this session's events to ``listener`` (in place of any previous one), and
        the ``item/delta`` frames the lane takes to ``deltas`` (to ``listener`` when None)."""
        registration = Listening(self, session_id, listener)
        self._listeners[session_id] = registration
        if self._lane is not None:
            self._lane.register(session_id, listener, deltas)
        return registration

    def follow(self, session_id: str, listener: EventListener) -> None:
        """Deliver this session's events to ``listener`` whenever no ``listen`` registration
        takes them (in place of any previous follower; it lasts as long as the host)."""
        self._followers[session_id] = listener

    def _forget(self, registration: Listening) -> None:
        if self._listeners.get(registration.session_id) is registration:
            del self._listeners[registration.session_id]
            if self._lane is not None:
                self._lane.register(registration.session_id, None)

    def mark_dead(self) -> None:
        """The host is gone: set ``dead`` and call what ``on_death`` was given (once)."""
        if self.dead.is_set():
            return
        self.dead.set()
        waiting, self._on_death = self._on_death, []
        for callback in waiting:
            callback()

    def on_death(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (which must not raise or wait) once the host is found gone, at once
        when it already is; what is returned forgets it. For a watcher that ends with its work
        rather than being cancelled, as a task waiting on ``dead`` would be."""
        if self.dead.is_set():
            callback()
            return _nothing
        self._on_death.append(callback)

        def forget() -> None:
            if callback in self._on_death:
                self._on_death.remove(callback)

        return forget

    async def ended(self) -> tuple[int | None, str]:
        """How a host that went away ended, once its exit status and stderr are in (bounded).

        Marks the host dead at once: a caller that saw it go away must not wait for the
        connection's watcher to notice it too."""
        self.mark_dead()
        with anyio.CancelScope(shield=True):
            await self.process.settle()
        return self.exit_summary()

    async def call(self, method: str, params: WireModel | None, result_type: type[R]) -> R:
        """Send an MSP request and parse its result (see the module contract for errors)."""
        assert self.connection is not None
        return await call(self.connection, method, _payload(params), result_type)

    async def start(self, method: str, params: WireModel | None) -> OutgoingRequest:
        """Send an MSP request whose answer ``answer`` collects later (errors as ``call``)."""
        assert self.connection is not None
        return await self.connection.start_request(method, _payload(params))

    def start_at_once(
        self, method: str, params: WireModel, *, hand_over: bool = False
    ) -> OutgoingRequest | None:
        """``start`` when the request goes out without a wait; else None, nothing sent.
        ``hand_over``: Muse waits for it, and runs before this process goes on
        (``Connection.start_request_at_once``)."""
        assert self.connection is not None
        return self.connection.start_request_at_once(method, _payload(params), hand_over=hand_over)

    async def answer(self, sent: OutgoingRequest, method: str, result_type: type[R]) -> R:
        """The parsed result of ``sent``, a ``method`` request ``start`` sent (as ``call``)."""
        assert self.connection is not None
        return typed_result(self.connection, method, await sent.result(), result_type)

    async def notify(self, method: str, params: WireModel) -> None:
        """Send an MSP notification (no answer comes; ``ConnectionClosed`` if the host went)."""
        assert self.connection is not None
        await self.connection.notify(method, _payload(params))

    async def call_forwarding(
        self, method: str, params: WireModel | None, result_type: type[R], member: str
    ) -> tuple[R, bytes | None]:
        """``call``, and the JSON token of the result's string ``member`` as the host spelled it
        (None when it cannot be proven; ``rpc.splice``), for a result passed on as it came."""
        assert self.connection is not None
        return await call_forwarding(self.connection, method, _payload(params), result_type, member)

    async def deliver(self, method: str, params: WireModel) -> None:
        session_id = getattr(params, "session_id", None)
        if session_id is None and method in HOST_WIDE_EVENTS:
            # About the host's account, not one session: every session's listener hears it.
            for each in {*self._listeners, *self._followers}:
                listener = self._listener_of(each)
                if listener is not None:
                    await listener(method, params)
            return
        listener = self._listener_of(session_id) if isinstance(session_id, str) else None
        if listener is None:
            logger.debug("host %d: no listener for %s", self.process.pid, method)
            return
        await listener(method, params)

    def _listener_of(self, session_id: str) -> EventListener | None:
        registration = self._listeners.get(session_id)
        return registration.listener if registration else self._followers.get(session_id)

    def exit_summary(self) -> tuple[int | None, str]:
        """The host's exit code (None while running) and the tail of its stderr."""
        return self.process.returncode, self.process.stderr_tail()


def _router(host_ref: list[MspHost]) -> RefusingUnknown:
    async def on_event(method: str, params: WireModel) -> None:
        if host_ref:
            await host_ref[0].deliver(method, params)

    async def on_ask(method: str, params: AskParams) -> None:
        await on_event(method, read_ask(method, params.raw))

    async def on_server_request(
        twin: str, params: AskParams, ctx: RequestContext
    ) -> msp.RequestReceipt:
        await on_ask(twin, params)
        return msp.RequestReceipt()

    notifications = [
        NotificationRoute(method, AskParams, partial(on_ask, method))
        for method, spec in msp.CLIENT_NOTIFICATIONS.items()
        if spec.params is not None and method in ASK_METHODS
    ] + [
        NotificationRoute(method, model, partial(on_event, method))
        for method, model in SESSION_EVENTS.items()
    ]
    requests = [
        RequestRoute(method, AskParams, partial(on_server_request, _REQUEST_TWINS[method]))
        for method, spec in msp.CLIENT_REQUESTS.items()
        if spec.params is not None and method in _REQUEST_TWINS
    ]
    # A request we have no route for is refused and reported to its session (``unanswered``).
    return RefusingUnknown(Router(requests, notifications), on_event)


def _initialize_params(experimental: bool, requested: Sequence[str] = ()) -> msp.InitializeParams:
    params = msp.InitializeParams(client_info=msp.ClientInfo(name=CLIENT_NAME, version=__version__))
    # Otherwise absent: a host must not see a member we never meant to send.
    if experimental:
        params.capabilities = msp.ClientCapabilities(experimental_api=True)
    if requested:
        capabilities = params.capabilities or msp.ClientCapabilities()
        capabilities.requested_capabilities = list(requested)
        params.capabilities = capabilities
    return params


@asynccontextmanager
async def open_host(
    binary_path: str,
    *,
    cwd: str,
    flags: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    startup_timeout: float,
    experimental: bool = False,
    requested: Sequence[str] = (),
    trust_newer: bool = False,
    launcher: Launcher = SUBPROCESSES,
    on_frame: FrameObserver | None = None,
) -> AsyncIterator[MspHost]:
    """Start ``muse serve`` and yield it once the handshake is done; always reaps it.

    ``experimental`` opts the connection in to Muse's experimental methods (``account/read``,
    ``session/delete``); only connections opened for those ask for it, so a session's own host
    behaves exactly as the stable protocol says. ``requested`` names capabilities to ask for
    (``requestedCapabilities``), e.g. ``sessionMcp`` for a session with its own MCP servers.
    ``trust_newer`` is the user's ``MUSE_ACP_TRUST_NEWER_HOST`` (``MspHost.features``);
    ``launcher`` starts the process (``host.launch``); ``on_frame`` sees every frame (a trace).

    Raises:
        TimeoutError: the host did not finish its handshake within ``startup_timeout``.
        ConnectionClosed: the host exited or closed its output during startup.
        RpcError: the host refused ``initialize``.
    """
    argv = [binary_path, "serve", *flags]
    async with launcher.serve(argv, cwd=cwd, env=env) as process:
        host_ref: list[MspHost] = []
        lane = EventLane(SESSION_EVENTS)
        connection = Connection(
            FrameReader(process.stdout, max_frame_bytes=MAX_HOST_FRAME_BYTES),
            FrameWriter(process.stdin),
            _router(host_ref),
            name=f"msp[{process.pid}]",
            cancel_method=None,
            lane=lane,
            on_frame=on_frame,
        )
        async with task_group() as tasks:
            await tasks.start(connection.serve)
            try:
                with anyio.fail_after(startup_timeout):
                    info = await call(
                        connection,
                        "initialize",
                        _initialize_params(experimental, requested),
                        msp.InitializeResult,
                    )
                    await connection.notify("initialized")
            except ConnectionClosed:
                # Give the exit status a moment to arrive so the error can say how it ended.
                with anyio.move_on_after(EXIT_STATUS_WAIT):
                    await process.exited.wait()
                raise HostEnded(process.returncode, process.stderr_tail()) from None
            host = MspHost(process, info, lane, trust_newer=trust_newer)
            host.connection = connection
            host_ref.append(host)

            async def watch() -> None:
                await wait_first(connection.closed, process.exited)
                host.mark_dead()

            tasks.start_soon(watch)
            try:
                yield host
            finally:
                host.mark_dead()
                await connection.aclose()
                tasks.cancel_scope.cancel()
