"""ACP sessions as the agent holds them, and the rules for finding one.

A session is created by ``session/new`` (no host is involved until its first prompt), or
brought back by ``session/load``, ``session/resume`` or ``session/fork``. Closing a session (or
logging out) keeps it in the registry as closed, so later requests get a clear "closed, load it
again" error instead of a generic "unknown session"; loading or resuming replaces it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.agent.config_options import SessionSettings
from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST, RESOURCE_NOT_FOUND, RpcError

if TYPE_CHECKING:
    from muse_acp.agent.execution import ExecutionHost
    from muse_acp.agent.turn import ActiveTurn

_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def check_session_id(session_id: str) -> str:
    """Refuse ids that could not have come from Muse (they also name files on disk)."""
    # fullmatch: with match and "$", an id ending in a line break would pass.
    if not _SESSION_ID.fullmatch(session_id):
        raise RpcError(
            INVALID_PARAMS,
            "sessionId must be 1 to 128 letters, digits, '-' or '_' starting with a letter or "
            "digit; use an id returned by session/new or session/list",
        )
    return session_id


@dataclass(eq=False)
class AcpSession:
    """One ACP session and what runs on its behalf."""

    @property
    def title(self) -> str | None:
        return self.user_title or self.host_title

    session_id: str
    cwd: str
    settings: SessionSettings = field(default_factory=SessionSettings)
    on_host: bool = False
    """Muse already has this session (resume it), rather than a new one (start it)."""
    host_title: str | None = None
    """The title Muse reports (its title, name or first prompt)."""
    user_title: str | None = None
    """The title the user set with /rename, kept by the adapter; it wins over Muse's."""
    closed: bool = False
    busy: str | None = None
    """What occupies the session ("a prompt", "a configuration change", ...), if anything."""
    host: ExecutionHost | None = None
    turn: ActiveTurn | None = None
    starting: anyio.CancelScope | None = None
    """Set while the session's host starts for a prompt, so a cancel can stop it."""
    cancel_pending: bool = False
    """A cancel arrived for the current prompt (before or during its turn)."""

    def claim(self, activity: str) -> None:
        """Mark the session busy, or refuse when something else already runs on it."""
        if self.busy is not None:
            raise RpcError(
                INVALID_REQUEST,
                f"session {self.session_id} is busy with {self.busy}; wait for it to finish "
                "or cancel it with session/cancel",
            )
        self.busy = activity

    def release(self) -> None:
        self.busy = None


class SessionRegistry:
    """Every session this agent has seen, open or closed."""

    def __init__(self) -> None:
        self._sessions: dict[str, AcpSession] = {}

    def add(self, session: AcpSession) -> AcpSession:
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> AcpSession | None:
        return self._sessions.get(session_id)

    def open_sessions(self) -> list[AcpSession]:
        return [s for s in self._sessions.values() if not s.closed]

    def require(self, session_id: str) -> AcpSession:
        """Return the open session, or raise -32602 for an id of the wrong shape and -32002
        (saying how to get it back) for one that is not open."""
        session = self._sessions.get(check_session_id(session_id))
        if session is None:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"session {session_id} is not open in this agent; load it with session/load "
                "or session/resume, or start a new session",
                {"sessionId": session_id},
            )
        if session.closed:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"session {session_id} was closed; load it again with session/load or "
                "session/resume, or start a new session",
                {"sessionId": session_id, "closed": True},
            )
        return session
