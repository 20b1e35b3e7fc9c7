"""The errors the client raises, each carrying the agent's last stderr lines.

Contract: an error response from the agent is raised as ``AgentError``, a ``RpcError`` with the
agent's ``code``, ``message`` and ``data`` (a result that does not validate is raised the same
way, as an INTERNAL_ERROR naming the method); an agent that went away (exited, or closed its
output) is raised as ``AgentExited``, a ``ConnectionClosed`` with its exit status when known.
Both keep the last lines the agent wrote to stderr in ``stderr_lines``, and ``AgentExited`` also
shows them as an exception note, since that is usually where the reason is. Callers may catch
the runtime's ``RpcError`` and ``ConnectionClosed`` without knowing these subclasses. Those
lines come from the connection's ``Diagnostics`` (``NoDiagnostics`` when there are none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from muse_acp.rpc import ConnectionClosed, RpcError

__all__ = ["AgentError", "AgentExited", "Diagnostics", "NoDiagnostics"]

NOTE_LINES: Final = 12
"""How many stderr lines an exception note shows (all are kept in ``stderr_lines``)."""


class AgentError(RpcError):
    """The agent answered a request with an error."""

    def __init__(self, error: RpcError, stderr_lines: Sequence[str] = ()) -> None:
        super().__init__(error.code, error.message, error.data)
        self.stderr_lines: tuple[str, ...] = tuple(stderr_lines)


class AgentExited(ConnectionClosed):
    """The agent went away before answering."""

    def __init__(
        self,
        returncode: int | None = None,
        stderr_lines: Sequence[str] = (),
        *,
        context: str | None = None,
    ) -> None:
        if returncode is None:
            message = "the agent closed its connection"
        else:
            message = f"the agent exited with status {returncode}"
        if context:
            message = f"{message} {context}"
        super().__init__(message)
        self.returncode = returncode
        self.stderr_lines: tuple[str, ...] = tuple(stderr_lines)
        if self.stderr_lines:
            shown = "\n".join(f"  {line}" for line in self.stderr_lines[-NOTE_LINES:])
            self.add_note(f"the agent's last stderr lines:\n{shown}")


class Diagnostics(Protocol):
    """Where the agent's last words come from (``AgentProcess`` for a child process)."""

    @property
    def returncode(self) -> int | None: ...

    def stderr_lines(self) -> tuple[str, ...]: ...

    async def settle(self) -> None: ...


class NoDiagnostics:
    """The ``Diagnostics`` of an agent that is not a child process (in-memory, custom streams)."""

    returncode: Final = None

    def stderr_lines(self) -> tuple[str, ...]:
        return ()

    async def settle(self) -> None:
        return None
