"""The simulated host's MSP endpoint: handshake, admission and every request's common checks.

Contract: ``run_host`` serves one client on stdin/stdout until stdin ends, then exits 0;
``serve_streams`` does the same over any pair of byte streams. ``Host`` is the connection's
``MessageHandler``; around the typed routes (only the methods the simulated version's schema
publishes; anything else is -32601 ``methodNotFound``) it applies, in order: injected faults
(``faults``); the handshake (-32600 ``alreadyInitialized`` or ``notInitialized``; capabilities
granted as the version's bundle and ``profile.VERSION_FACTS`` say); for commands, a UUIDv7
``commandId`` (-32602), replay of a known ``commandId`` with the first answer byte for byte, and
admission (at most ``ADMISSION_CAPACITY`` in flight, else -32031 ``backpressured``); and
``data.kind`` on every error.
"""

from __future__ import annotations

import logging
import platform
import sys
from collections import OrderedDict
from functools import partial
from typing import Any, Final, Literal

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.rpc import (
    Connection,
    FrameObserver,
    JsonValue,
    NotificationRoute,
    RawJson,
    RequestContext,
    RequestRoute,
    Result,
    Router,
    RpcError,
    encode_value,
    open_stdio,
)
from muse_acp.sim.model.questions import engage
from muse_acp.sim.model.subagents import SubagentControls
from muse_acp.sim.model.workflow_pauses import WorkflowPauses
from muse_acp.sim.model.workflow_runs import ChildControls
from muse_acp.sim.model.workflows import BackgroundControls
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.sim.serve.commands import SessionCommands
from muse_acp.sim.serve.compaction import Compaction
from muse_acp.sim.serve.controls import TurnControls
from muse_acp.sim.serve.goals import Goals
from muse_acp.sim.serve.reads import Reads
from muse_acp.sim.serve.resume import SessionContinuations
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import ClientInfo, HostContext
from muse_acp.sim.state.first_words import FirstWords
from muse_acp.sim.state.ids import is_uuid7
from muse_acp.sim.state.profile import load_profile
from muse_acp.sim.state.wire import HOST_FRAME_LIMIT, HostReader, HostWriter, Outbox
from muse_acp_wire.msp import (
    EmptyResult,
    InitializeParams,
    InitializeResult,
    SchemaInfo,
    ServerInfo,
    UserInputEngagedParams,
)

__all__ = ["ADMISSION_CAPACITY", "Host", "run_host", "serve_streams"]

logger: Final = logging.getLogger("muse_acp.sim")

ADMISSION_CAPACITY: Final = 4
REPLAY_MEMORY: Final = 256
"""How many command answers are kept for replayed ``commandId`` values."""
MALFORMED_LINE: Final = b"muse-sim: this line is deliberately not JSON"
OVERSIZED_HEAD: Final = b'{"jsonrpc":"2.0","method":"muse-sim/padding","params":{"padding":"'


Family = Literal["unix", "windows"]
System = Literal["macos", "linux", "windows"]


def _platform() -> tuple[Family, System, str]:
    arch = platform.machine().lower() or "unknown"
    if sys.platform == "win32":
        return "windows", "windows", arch
    return "unix", "macos" if sys.platform == "darwin" else "linux", arch


class Host:
    """The connection's message handler (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx
        routes: list[RequestRoute[Any]] = [
            RequestRoute("initialize", InitializeParams, self.initialize),
            *SessionCommands(ctx).routes(),
            *SessionContinuations(ctx).routes(),
            *TurnControls(ctx).routes(),
            *Reads(ctx).routes(),
            *Compaction(ctx).routes(),
            *Goals(ctx).routes(),
            *BackgroundControls(ctx).routes(),
            *ChildControls(ctx).routes(),
            *SubagentControls(ctx).routes(),
            *WorkflowPauses(ctx).routes(),
        ]
        notifications: list[NotificationRoute[Any]] = [
            NotificationRoute("initialized", EmptyResult, self.initialized)
        ]
        if ctx.profile.takes("userInput/engaged"):
            notifications.append(
                NotificationRoute("userInput/engaged", UserInputEngagedParams, self.engaged)
            )
        self.router = Router(
            requests=[route for route in routes if ctx.profile.serves(route.method)],
            notifications=notifications,
        )
        self._stage: Literal["new", "initializing", "ready"] = "new"
        self._in_flight = 0
        self._answers: OrderedDict[str, tuple[str, RawJson]] = OrderedDict()

    async def initialize(self, params: InitializeParams, _: RequestContext) -> InitializeResult:
        ctx = self.ctx
        capabilities = params.capabilities
        requested = set(capabilities.requested_capabilities or []) if capabilities else set()
        granted = ctx.profile.grants(requested)
        ctx.granted = frozenset(granted)
        experimental = bool(capabilities and capabilities.experimental_api)
        dialogs = capabilities is None or capabilities.user_input_dialogs is not False
        ctx.client = ClientInfo(params.client_info.name, dialogs, experimental)
        self._stage = "initializing"
        version = ctx.profile.version
        family, system, arch = _platform()
        return InitializeResult(
            server_info=ServerInfo(name="muse", version=version.version),
            user_agent=(f"muse-sim/{version.version}-{version.build} (simulated; {system}-{arch})"),
            muse_home=str(ctx.options.home),
            platform_family=family,
            platform_os=system,
            schema_=SchemaInfo(version=1, fingerprint=ctx.profile.fingerprint),
            granted_capabilities=granted,
            experimental_api=experimental,
            session_durability="ephemeral" if ctx.options.no_session_log else "durable",
        )

    async def engaged(self, params: UserInputEngagedParams) -> None:
        session = self.ctx.sessions.get(params.session_id)
        if session is not None:  # a notification has no answer: an unknown session is ignored
            engage(session, params.user_input_id)

    async def initialized(self, _: EmptyResult) -> None:
        if self.ctx.options.quirks.drop_initialized:
            logger.debug("ignored initialized (quirk drop-initialized)")
            return
        if self._stage == "initializing":
            self._stage = "ready"

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        await self.router.handle_notification(method, params)

    async def handle_request(
        self, method: str, params: JsonValue | None, request: RequestContext
    ) -> Result:
        faults = self.ctx.options.faults
        if method in faults.exit_before_ack:
            exit_now(f"exit-before-ack:{method}")
        try:
            result = await self._checked(method, params, request)
        except RpcError as exc:
            raise errors.with_kind(exc) from None
        except Exception:
            logger.exception("muse-sim failed to serve %s", method)
            raise errors.internal() from None
        writer = self.ctx.outbox.writer
        if method in faults.malformed:
            await writer.send(MALFORMED_LINE)
        if method in faults.oversized:
            padding = faults.oversized_bytes or HOST_FRAME_LIMIT + 1024
            await writer.send(OVERSIZED_HEAD + b"x" * padding + b'"}}')
        if method in faults.exit_after_ack:
            writer.then(request.request_id, partial(exit_now, f"exit-after-ack:{method}"))
        return result

    async def _checked(
        self, method: str, params: JsonValue | None, request: RequestContext
    ) -> Result:
        faults = self.ctx.options.faults
        if method == "initialize":
            if faults.exits_at("handshake"):
                exit_now("exit:handshake")
            if "handshake" in faults.hangs:
                await anyio.sleep_forever()
            if self._stage != "new":
                raise errors.already_initialized()
            return await self.router.handle_request(method, params, request)
        if self._stage != "ready":
            raise errors.not_initialized()
        if not self.ctx.profile.is_command(method):
            if method in faults.hang_ack:
                await anyio.sleep_forever()
            return await self.router.handle_request(method, params, request)
        command_id = params.get("commandId") if isinstance(params, dict) else None
        if isinstance(command_id, str):
            if not is_uuid7(command_id):
                raise errors.invalid_params(f"invalid {method} commandId: expected UUIDv7")
            known = self._answers.get(command_id)
            if known is not None:
                if known[0] != method:
                    raise errors.command_rejected(method, command_id, "command_id_conflict")
                return known[1]
        if self._in_flight >= ADMISSION_CAPACITY:
            raise errors.backpressured(ADMISSION_CAPACITY)
        if method in faults.refuse:
            refused = command_id if isinstance(command_id, str) else ""
            raise errors.command_rejected(method, refused, "unsupported_route")
        self._in_flight += 1
        try:
            if method in faults.hang_ack:
                await anyio.sleep_forever()
            if method in faults.slow_ack:
                await anyio.sleep(faults.ack_delay_ms / 1000)
            result = await self.router.handle_request(method, params, request)
        finally:
            self._in_flight -= 1
        if isinstance(command_id, str):
            answer = RawJson(encode_value(result))
            self._answers[command_id] = (method, answer)
            while len(self._answers) > REPLAY_MEMORY:
                self._answers.popitem(last=False)
            return answer
        return result


async def serve_streams(
    options: ServeOptions, receive: ByteReceiveStream, send: ByteSendStream
) -> None:
    """Serve one MSP client over the given byte streams until ``receive`` ends.

    The in-process form of ``muse-sim serve``; faults that exit end the whole process, as they
    would end a host. Turns still running when the input ends stop where they are, exactly as
    if the host had died: a later ``session/resume`` closes them. The streams are left open for
    their owner to close.
    """
    profile = load_profile(options.version)
    first_words = None if options.timings is None else FirstWords(options.timings)
    writer = HostWriter(send, watch=None if first_words is None else first_words.written)
    ctx = HostContext(profile, options, Outbox(writer, delay_ms=options.faults.slow_ms))
    reader = HostReader(receive, writer, capture=options.capture)
    observe: FrameObserver = ctx.ledger.observe
    if first_words is not None:
        observe = _both(observe, first_words.observe)
    conn = Connection(
        reader, writer, Host(ctx), name="muse-sim", cancel_method=None, on_frame=observe
    )
    try:
        async with anyio.create_task_group() as tasks:
            ctx.bind(conn, tasks)
            await conn.serve()
            tasks.cancel_scope.cancel()
    finally:
        ctx.close()
        reader.close_capture()
        if first_words is not None:
            first_words.write()


def _both(first: FrameObserver, second: FrameObserver) -> FrameObserver:
    def observe(direction: Literal["in", "out"], frame: bytes) -> None:
        first(direction, frame)
        second(direction, frame)

    return observe


async def _serve_stdio(options: ServeOptions) -> int:
    async with open_stdio() as (receive, send):
        await serve_streams(options, receive, send)
    return 0


def run_host(options: ServeOptions) -> int:
    """Serve MSP on stdin/stdout until stdin ends; returns the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="muse-sim: %(message)s")
    try:
        return anyio.run(_serve_stdio, options)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        sys.stderr.write(f"muse-sim: {exc}\n")
        return 1
