"""The client side of one ACP connection: typed requests, sessions, and the agent's questions.

Contract: an ``AgentConnection`` wraps a running ``muse_acp.rpc.Connection`` to an agent that
has been initialized (``initialize_response``). Its methods send typed requests and return the
generated response models; the agent's error responses are raised as ``AgentError`` and a
vanished agent as ``AgentExited`` (see ``errors``). It routes what the agent sends:
``session/update`` to the ``Session`` it names (updates for a session not yet known, such as
those following a ``session/new`` response, are held in a small bounded buffer until the
session is), ``session/request_permission`` to the permission handler, ``elicitation/create``
to the elicitation handler, and refuses everything else (no file system, no terminal).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from typing import Any, Final, Generic, TypeVar

from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from pydantic import BaseModel, ValidationError

from muse_acp.client.errors import AgentError, AgentExited, Diagnostics
from muse_acp.client.output import MAX_PAGE_BYTES, OutputRef, PendingPage, read_pages
from muse_acp.client.policies import (
    ElicitationHandler,
    PermissionHandler,
    cancelled_permission,
    declined_elicitation,
    resolve,
)
from muse_acp.client.session import Session, UpdateHandler
from muse_acp.client.updates import UpdateEnvelope, parse_update
from muse_acp.rpc import (
    Connection,
    ConnectionClosed,
    FrameReader,
    FrameWriter,
    NotificationRoute,
    OutgoingRequest,
    RequestContext,
    RequestRoute,
    Router,
    RpcError,
    typed_result,
)
from muse_acp_wire import acp

__all__ = ["AgentConnection", "PendingResult"]

logger: Final = logging.getLogger("muse_acp.client")

_R = TypeVar("_R", bound=BaseModel)

UNCLAIMED_LIMIT: Final = 256
"""Updates kept for sessions the client has not been told about yet."""
LIST_PAGE_LIMIT: Final = 10_000
"""Pages ``list_sessions`` follows before deciding the agent's cursors never end."""


class PendingResult(Generic[_R]):
    """A request sent to the agent whose result is still to be collected (``start_request``)."""

    __slots__ = ("_agent", "_method", "_outgoing", "_result_type")

    def __init__(
        self,
        agent: AgentConnection,
        outgoing: OutgoingRequest,
        method: str,
        result_type: type[_R],
    ) -> None:
        self._agent = agent
        self._outgoing = outgoing
        self._method = method
        self._result_type = result_type

    async def result(self) -> _R:
        """The validated result (see the module contract for errors)."""
        agent = self._agent
        try:
            raw = await self._outgoing.result()
            return typed_result(agent.connection, self._method, raw, self._result_type)
        except (ConnectionClosed, RpcError) as error:
            raise await agent.failure(self._method, error) from None

    async def withdraw(self) -> None:
        """Give the result up; the agent is told when it has not answered yet."""
        await self._outgoing.withdraw()


class AgentConnection:
    """An initialized connection to an ACP agent (see the module contract)."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        tasks: TaskGroup,
        *,
        diagnostics: Diagnostics,
        on_permission: PermissionHandler | None,
        on_elicitation: ElicitationHandler | None,
        max_buffered_updates: int,
    ) -> None:
        if max_buffered_updates < 1:
            raise ValueError("max_buffered_updates must be at least 1")
        self.connection = Connection(
            FrameReader(receive), FrameWriter(send), self._router(), name="acp-client"
        )
        """The underlying JSON-RPC connection, for methods this library does not wrap."""
        self.initialize_response = acp.InitializeResponse(protocol_version=0)
        """The agent's answer to ``initialize`` (set once the connection is open)."""
        self.max_buffered_updates = max_buffered_updates
        self._tasks = tasks
        self._diagnostics = diagnostics
        self._on_permission = on_permission
        self._on_elicitation = on_elicitation
        self._sessions: dict[str, Session] = {}
        self._unclaimed: deque[tuple[str, acp.SessionUpdate]] = deque(maxlen=UNCLAIMED_LIMIT)
        self._closed = False

    # -- plumbing -------------------------------------------------------------------------

    def stderr_lines(self) -> tuple[str, ...]:
        """The last lines the agent wrote to stderr (empty when it is not a child process)."""
        return self._diagnostics.stderr_lines()

    def gone(self, context: str | None = None) -> AgentExited:
        """The error describing a vanished agent, with what is known of its end so far."""
        return AgentExited(self._diagnostics.returncode, self.stderr_lines(), context=context)

    async def request(self, method: str, params: BaseModel | None, result_type: type[_R]) -> _R:
        """Send a request and validate its result (see the module contract for errors)."""
        pending = await self.start_request(method, params, result_type)
        return await pending.result()

    async def start_request(
        self, method: str, params: BaseModel | None, result_type: type[_R]
    ) -> PendingResult[_R]:
        """Send a request now; its result is collected later with ``result`` on what is
        returned, or given up with ``withdraw``, exactly once.

        Raises:
            AgentExited: the agent is gone.
        """
        try:
            outgoing = await self.connection.start_request(method, params)
        except ConnectionClosed as closed:
            raise await self.failure(method, closed) from None
        return PendingResult(self, outgoing, method, result_type)

    async def failure(self, method: str, error: ConnectionClosed | RpcError) -> Exception:
        """What a failed ``method`` request raises: ``AgentExited`` once what is known of the
        agent's end has arrived, or ``AgentError``."""
        if isinstance(error, ConnectionClosed):
            await self._diagnostics.settle()
            return self.gone(f"before answering {method}")
        return AgentError(error, self.stderr_lines())

    async def notify(self, method: str, params: BaseModel | None) -> None:
        """Send a notification.

        Raises:
            AgentExited: the agent is gone.
        """
        try:
            await self.connection.notify(method, params)
        except ConnectionClosed:
            raise self.gone(f"before {method} could be sent") from None

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Run ``work`` beside the caller for as long as the connection lasts; False if closed."""
        if self._closed:
            return False
        self._tasks.start_soon(work)
        return True

    def mark_closed(self) -> None:
        self._closed = True
        for session in self._sessions.values():
            session.detach()

    @property
    def output_page_bytes(self) -> int:
        """The largest stored-output page to ask for: 1 MiB or the agent's advertised maximum."""
        meta = self.initialize_response.field_meta or {}
        try:
            advertised = acp.MuseAgentMeta.model_validate(meta, by_alias=True, by_name=False)
        except ValidationError:
            return MAX_PAGE_BYTES
        output = advertised.muse_output
        return min(MAX_PAGE_BYTES, output.max_length_bytes) if output else MAX_PAGE_BYTES

    # -- what the agent sends -------------------------------------------------------------

    def _router(self) -> Router:
        return Router(
            requests=[
                RequestRoute(
                    "session/request_permission", acp.RequestPermissionRequest, self._permission
                ),
                RequestRoute("elicitation/create", acp.CreateElicitationRequest, self._elicit),
            ],
            notifications=[NotificationRoute("session/update", UpdateEnvelope, self._update)],
        )

    async def _permission(
        self, params: acp.RequestPermissionRequest, _: RequestContext
    ) -> acp.RequestPermissionResponse:
        if self._on_permission is None:
            return cancelled_permission()
        return await resolve(self._on_permission(params))

    async def _elicit(
        self, params: acp.CreateElicitationRequest, _: RequestContext
    ) -> acp.CreateElicitationResponse:
        if self._on_elicitation is None:
            return declined_elicitation()
        return await resolve(self._on_elicitation(params))

    async def _update(self, envelope: UpdateEnvelope) -> None:
        update = parse_update(envelope.update)
        if update is None:
            return
        session = self._sessions.get(envelope.session_id)
        if session is None:
            self._unclaimed.append((envelope.session_id, update))
            return
        await session.deliver(update)

    async def _adopt(self, session: Session) -> Session:
        """Register ``session`` after delivering, in order, any updates that came first."""
        while True:
            pending = [u for sid, u in self._unclaimed if sid == session.session_id]
            if not pending:
                previous = self._sessions.get(session.session_id)
                if previous is not None and previous is not session:
                    previous.detach()
                self._sessions[session.session_id] = session
                return session
            kept = [(sid, u) for sid, u in self._unclaimed if sid != session.session_id]
            self._unclaimed.clear()
            self._unclaimed.extend(kept)
            for update in pending:
                await session.deliver(update)

    # -- sessions -------------------------------------------------------------------------

    async def new_session(self, cwd: str, *, on_update: UpdateHandler | None = None) -> Session:
        """Start a session in the absolute directory ``cwd``."""
        response = await self.request(
            "session/new", acp.NewSessionRequest(cwd=cwd, mcp_servers=[]), acp.NewSessionResponse
        )
        session = Session(
            self,
            response.session_id,
            cwd,
            modes=response.modes,
            config_options=response.config_options,
            on_update=on_update,
        )
        return await self._adopt(session)

    async def load_session(
        self, session_id: str, cwd: str, *, on_update: UpdateHandler | None = None
    ) -> Session:
        """Reopen a session; its replayed history goes to ``on_update`` or ``replayed``."""
        session = Session(self, session_id, cwd, on_update=on_update)
        await self._adopt(session)
        session.begin_replay()
        try:
            response = await self.request(
                "session/load",
                acp.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[]),
                acp.LoadSessionResponse,
            )
        except BaseException:
            self._forget(session)
            raise
        finally:
            session.end_replay()
        session.apply_settings(response)
        return session

    async def resume_session(
        self, session_id: str, cwd: str, *, on_update: UpdateHandler | None = None
    ) -> Session:
        """Reopen a session without replaying its history."""
        response = await self.request(
            "session/resume",
            acp.ResumeSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[]),
            acp.ResumeSessionResponse,
        )
        session = Session(self, session_id, cwd, on_update=on_update)
        session.apply_settings(response)
        return await self._adopt(session)

    async def fork_session(
        self, session_id: str, cwd: str, *, on_update: UpdateHandler | None = None
    ) -> Session:
        """Start a new session from ``session_id``'s history."""
        response = await self.request(
            "session/fork",
            acp.ForkSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[]),
            acp.ForkSessionResponse,
        )
        session = Session(
            self,
            response.session_id,
            cwd,
            modes=response.modes,
            config_options=response.config_options,
            on_update=on_update,
        )
        return await self._adopt(session)

    async def close_session(self, session_id: str) -> acp.CloseSessionResponse:
        """Close a session in the agent; its ``Session`` object stops receiving updates."""
        response = await self.request(
            "session/close",
            acp.CloseSessionRequest(session_id=session_id),
            acp.CloseSessionResponse,
        )
        session = self._sessions.get(session_id)
        if session is not None:
            self._forget(session)
        return response

    def _forget(self, session: Session) -> None:
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]
        session.detach()

    async def list_sessions(self, cwd: str | None = None) -> AsyncGenerator[acp.SessionInfo, None]:
        """Every session the agent lists (of ``cwd`` when given), following all pages.

        Raises:
            RpcError: the agent failed a page, or its cursors never end.
        """
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(LIST_PAGE_LIMIT):
            request = acp.ListSessionsRequest()
            if cwd is not None:
                request.cwd = cwd
            if cursor is not None:
                request.cursor = cursor
            page = await self.request("session/list", request, acp.ListSessionsResponse)
            for row in page.sessions:
                yield row
            cursor = page.next_cursor
            if not cursor:
                return
            if cursor in seen:
                raise RpcError.internal_error("the agent repeated a session/list cursor")
            seen.add(cursor)
        raise RpcError.internal_error(f"session/list did not end within {LIST_PAGE_LIMIT} pages")

    def sessions(self) -> Sequence[Session]:
        """The sessions this connection has open."""
        return tuple(self._sessions.values())

    # -- account and extensions -----------------------------------------------------------

    async def authenticate(self, method_id: str) -> acp.AuthenticateResponse:
        return await self.request(
            "authenticate", acp.AuthenticateRequest(method_id=method_id), acp.AuthenticateResponse
        )

    async def logout(self) -> acp.LogoutResponse:
        return await self.request("logout", acp.LogoutRequest(), acp.LogoutResponse)

    async def read_output(
        self, ref: OutputRef, *, page_bytes: int | None = None
    ) -> AsyncGenerator[acp.MuseReadOutputResponse, None]:
        """The pages of a stored output, from offset 0 until ``eof`` (see ``output``)."""

        async def start(request: acp.MuseReadOutputRequest) -> PendingPage:
            return await self.start_request("_muse/readOutput", request, acp.MuseReadOutputResponse)

        size = self.output_page_bytes if page_bytes is None else page_bytes
        async for page in read_pages(start, ref, page_bytes=size):
            yield page
