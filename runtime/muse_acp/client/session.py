"""One ACP session as a script sees it: prompts as typed update streams, and its settings.

Contract: a ``Session`` is created by the ``AgentConnection`` (new, load, resume, fork) and keeps
what the agent said about it current (modes, config options, commands, title, running turn).
``prompt`` yields the session's updates in order until the response, then sets
``stop_reason``; a failed prompt raises the agent's error from the iterator. Updates pass a
bounded buffer: a slow consumer pauses reading from the agent, nothing is dropped, so do not
wait on another request of the same connection inside the loop. One turn runs at a time: leaving
the loop early sends ``session/cancel``, and a new prompt cancels a running one first. Updates
outside a prompt go to ``on_update``; a load's replay goes there or into ``replayed`` (at most
``REPLAY_LIMIT``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import suppress
from typing import Any, Final, Protocol, TypeAlias, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from pydantic import BaseModel

from muse_acp.client.errors import AgentExited
from muse_acp.client.output import OutputRef, decode_page
from muse_acp.client.policies import resolve
from muse_acp.client.updates import message_text
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import acp

__all__ = [
    "REPLAY_LIMIT",
    "Prompt",
    "Session",
    "SessionConnection",
    "UpdateHandler",
    "content_blocks",
]

logger: Final = logging.getLogger("muse_acp.client")

UpdateHandler: TypeAlias = Callable[[acp.SessionUpdate], Awaitable[None] | None]
"""Receives updates outside prompts; runs in the connection's reader, so it must be quick."""

Prompt: TypeAlias = str | Sequence[acp.ContentBlock]
"""Prompt text, or the content blocks of a prompt."""

REPLAY_LIMIT: Final = 100_000
PREVIOUS_TURN_TIMEOUT: Final = 30.0
"""Seconds a new prompt waits for the cancelled previous turn of its session to end."""
ACTIVE_TURN_KEY: Final = "muse/activeTurnId"

_R = TypeVar("_R", bound=BaseModel)


class SessionConnection(Protocol):
    """What a ``Session`` needs of the connection it belongs to (an ``AgentConnection``)."""

    @property
    def max_buffered_updates(self) -> int: ...

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> bool: ...

    def gone(self, context: str | None = None) -> AgentExited: ...

    async def request(self, method: str, params: BaseModel | None, result_type: type[_R]) -> _R: ...

    async def notify(self, method: str, params: BaseModel | None) -> None: ...

    def read_output(
        self, ref: OutputRef, *, page_bytes: int | None = None
    ) -> AsyncGenerator[acp.MuseReadOutputResponse, None]: ...


def content_blocks(prompt: Prompt) -> list[acp.ContentBlock]:
    """The content blocks of ``prompt`` (text becomes one text block)."""
    if isinstance(prompt, str):
        return [acp.TextContentBlock(type="text", text=prompt)]
    return list(prompt)


class _Turn:
    """One prompt request: written by its task, read by the iterator that reads its updates."""

    __slots__ = ("cancelled", "error", "finished", "stop_reason")

    def __init__(self) -> None:
        self.finished = anyio.Event()
        self.cancelled = False
        """The client sent ``session/cancel`` for this turn (its reader left or was superseded)."""
        self.stop_reason: acp.StopReason | None = None
        self.error: RpcError | ConnectionClosed | None = None


class Session:
    """One ACP session of an ``AgentConnection`` (see the module contract)."""

    def __init__(
        self,
        agent: SessionConnection,
        session_id: str,
        cwd: str | None,
        *,
        modes: acp.SessionModeState | None = None,
        config_options: Sequence[acp.SessionConfigOption] | None = None,
        on_update: UpdateHandler | None = None,
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.modes = modes
        self.config_options: list[acp.SessionConfigOption] = list(config_options or [])
        self.available_commands: list[acp.AvailableCommand] = []
        self.title: str | None = None
        self.active_turn_id: str | None = None
        """The Muse turn running now, when the agent reports it (needed to steer)."""
        self.stop_reason: acp.StopReason | None = None
        """Why the turn whose iteration finished last ended (None while a prompt runs)."""
        self.on_update = on_update
        self.replayed: list[acp.SessionUpdate] = []
        self.closed = False
        self._agent = agent
        self._sink: MemoryObjectSendStream[acp.SessionUpdate] | None = None
        self._turn: _Turn | None = None
        self._collecting = False

    def __repr__(self) -> str:
        return f"Session({self.session_id!r}, cwd={self.cwd!r})"

    @property
    def current_mode_id(self) -> str | None:
        return self.modes.current_mode_id if self.modes is not None else None

    def apply_settings(self, response: acp.LoadSessionResponse | acp.ResumeSessionResponse) -> None:
        self.modes = response.modes
        self.config_options = list(response.config_options or [])

    # -- incoming updates -----------------------------------------------------------------

    def _apply(self, update: acp.SessionUpdate) -> None:
        if isinstance(update, acp.CurrentModeUpdateSessionUpdate):
            if self.modes is not None:
                self.modes.current_mode_id = update.current_mode_id
        elif isinstance(update, acp.ConfigOptionUpdateSessionUpdate):
            self.config_options = list(update.config_options)
        elif isinstance(update, acp.AvailableCommandsUpdateSessionUpdate):
            self.available_commands = list(update.available_commands)
        elif isinstance(update, acp.SessionInfoUpdateSessionUpdate):
            if "title" in update.model_fields_set:
                self.title = update.title
            meta: dict[str, Any] = update.field_meta or {}
            if ACTIVE_TURN_KEY in meta:
                turn = meta[ACTIVE_TURN_KEY]
                self.active_turn_id = turn if isinstance(turn, str) else None

    async def deliver(self, update: acp.SessionUpdate) -> None:
        """Take one update from the agent (called in order by the connection's reader)."""
        self._apply(update)
        sink = self._sink
        if sink is not None:
            try:
                await sink.send(update)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                logger.debug("%s: dropped an update, the prompt's reader left", self.session_id)
            return
        if self.on_update is not None:
            await resolve(self.on_update(update))
        elif self._collecting:
            if len(self.replayed) < REPLAY_LIMIT:
                self.replayed.append(update)
            elif len(self.replayed) == REPLAY_LIMIT:
                logger.warning("%s: replay exceeds %d updates", self.session_id, REPLAY_LIMIT)

    def begin_replay(self) -> None:
        self.replayed = []
        self._collecting = True

    def end_replay(self) -> None:
        self._collecting = False

    def detach(self) -> None:
        """Mark the session closed or replaced; a running prompt still ends with its response."""
        self.closed = True

    # -- prompts --------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> AsyncGenerator[acp.SessionUpdate, None]:
        """Run one prompt turn, yielding its updates (see the module contract).

        Raises:
            TimeoutError: the previous turn did not end within ``PREVIOUS_TURN_TIMEOUT``
                seconds of being cancelled.
            RpcError: the agent refused or failed the prompt (``AgentError``).
            ConnectionClosed: the agent went away (``AgentExited``).
        """
        previous = self._turn
        if previous is not None and not previous.finished.is_set():
            self._sink = None
            await self._cancel_turn(previous)
            with anyio.fail_after(PREVIOUS_TURN_TIMEOUT):
                await previous.finished.wait()
        request = acp.PromptRequest(session_id=self.session_id, prompt=content_blocks(prompt))
        send, receive = anyio.create_memory_object_stream[acp.SessionUpdate](
            self._agent.max_buffered_updates
        )
        turn = _Turn()
        if not self._agent.spawn(lambda: self._run_prompt(request, send, turn)):
            send.close()
            receive.close()
            raise self._agent.gone("before the prompt was sent")
        self.stop_reason = None
        self._sink, self._turn = send, turn
        finished = False
        try:
            while True:
                try:
                    update = await receive.receive()
                except anyio.EndOfStream:
                    break
                yield update
            finished = True
        finally:
            receive.close()
            if not finished and not turn.finished.is_set():
                if self._turn is turn:
                    self._sink = None
                self._agent.spawn(lambda: self._cancel_turn(turn))
        if turn.error is not None:
            raise turn.error
        self.stop_reason = turn.stop_reason

    async def _run_prompt(
        self,
        request: acp.PromptRequest,
        send: MemoryObjectSendStream[acp.SessionUpdate],
        turn: _Turn,
    ) -> None:
        try:
            response = await self._agent.request("session/prompt", request, acp.PromptResponse)
            turn.stop_reason = response.stop_reason
        except (RpcError, ConnectionClosed) as error:
            turn.error = error
        finally:
            if turn.error is None and turn.stop_reason is None:
                turn.error = self._agent.gone("while the prompt was running")
            if self._turn is turn:
                self._sink, self._turn = None, None
            send.close()
            turn.finished.set()

    async def _cancel_turn(self, turn: _Turn) -> None:
        """Cancel a turn whose reader left or that a new prompt replaces (once)."""
        if turn.cancelled:
            return
        turn.cancelled = True
        try:
            await self.cancel()
        except (RpcError, ConnectionClosed) as error:
            logger.debug("%s: could not cancel the previous turn: %s", self.session_id, error)

    async def prompt_text(self, prompt: Prompt) -> str:
        """Run a prompt and return the text of the agent's message chunks, concatenated."""
        parts: list[str] = []
        async for update in self.prompt(prompt):
            text = message_text(update)
            if text is not None:
                parts.append(text)
        return "".join(parts)

    async def cancel(self) -> None:
        """Ask the agent to stop the running prompt (``session/cancel``)."""
        await self._agent.notify(
            "session/cancel", acp.CancelNotification(session_id=self.session_id)
        )

    # -- settings -------------------------------------------------------------------------

    async def set_mode(self, mode_id: str) -> acp.SetSessionModeResponse:
        request = acp.SetSessionModeRequest(session_id=self.session_id, mode_id=mode_id)
        response = await self._agent.request(
            "session/set_mode", request, acp.SetSessionModeResponse
        )
        if self.modes is not None:
            self.modes.current_mode_id = mode_id
        return response

    async def set_config_option(
        self, config_id: str, value: str | bool
    ) -> list[acp.SessionConfigOption]:
        """Change one option; returns (and keeps) every option as the agent now has them."""
        request = acp.SetSessionConfigOptionRequest(
            session_id=self.session_id, config_id=config_id, value=value
        )
        if isinstance(value, bool):
            request.type = "boolean"
        response = await self._agent.request(
            "session/set_config_option", request, acp.SetSessionConfigOptionResponse
        )
        self.config_options = list(response.config_options)
        return self.config_options

    # -- Muse extensions ------------------------------------------------------------------

    def read_output(
        self,
        ref: OutputRef | Mapping[str, Any] | acp.SessionUpdate,
        *,
        page_bytes: int | None = None,
    ) -> AsyncGenerator[acp.MuseReadOutputResponse, None]:
        """The pages of one of this session's stored outputs (``_muse/readOutput``).

        Raises:
            ValueError: ``ref`` is not a stored output reference of this session.
        """
        parsed = OutputRef.of(ref)
        if parsed.session_id != self.session_id:
            raise ValueError(f"the stored output belongs to session {parsed.session_id}")
        return self._agent.read_output(parsed, page_bytes=page_bytes)

    async def save_output(
        self, ref: OutputRef | Mapping[str, Any] | acp.SessionUpdate, path: str | os.PathLike[str]
    ) -> int:
        """Write a stored output's bytes to ``path``; returns how many were written.

        A partly written file is removed when the read fails.
        """
        written = 0
        target = anyio.Path(path)
        try:
            async with await anyio.open_file(target, "wb") as file:
                async for page in self.read_output(ref):
                    data = decode_page(page)
                    await file.write(data)
                    written += len(data)
        except BaseException:
            with anyio.CancelScope(shield=True), suppress(OSError):
                await target.unlink()
            raise
        return written

    async def steer(self, prompt: Prompt, expected_turn_id: str) -> acp.MuseSteerResponse:
        """Add input to the running turn ``expected_turn_id`` (``_muse/steer``)."""
        request = acp.MuseSteerRequest(
            session_id=self.session_id,
            expected_turn_id=expected_turn_id,
            prompt=content_blocks(prompt),
        )
        return await self._agent.request("_muse/steer", request, acp.MuseSteerResponse)

    async def compatible_steer(
        self, prompt: Prompt, expected_turn_id: str | None = None
    ) -> acp.SessionSteeringResponse:
        """Add input to the running turn through the shared ``_session/steering`` method."""
        request = acp.SessionSteeringRequest(
            session_id=self.session_id, prompt=content_blocks(prompt)
        )
        if expected_turn_id is not None:
            request.expected_turn_id = expected_turn_id
        return await self._agent.request("_session/steering", request, acp.SessionSteeringResponse)
