"""Notices: what muse-acp tells the user beside the conversation, and how each client hears it.

Contract: a ``Notice`` is one warning the adapter gives a session's user (a failure it worked
around, a setting it could not apply, something it could not read back), with a severity, a
plain-text title that reads on its own and the full text. The session's update outlet alone
decides how it goes out (``NoticeOutlet``): as an ACP ``notice`` update to a client that set the
``session.notices`` capability, and otherwise exactly as before notices existed: the text as an
agent message when ``chat`` is set, nothing at all (the log line only) when it is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from muse_acp_wire import acp

__all__ = ["Notice", "NoticeOutlet", "notice_update"]


@dataclass(frozen=True, slots=True)
class Notice:
    """One warning for the user of a session (see the module contract)."""

    severity: acp.NoticeSeverity
    title: str
    """Plain text, never empty, that makes sense without ``text``."""
    text: str
    """The whole message: the notice's description, and the chat text of a plain client."""
    chat: bool = True
    """A client without notices sees ``text`` in the chat (False: in muse-acp's log only)."""


class NoticeOutlet(Protocol):
    """Where a session's notices go (``sessions.outlet.UpdateOutlet`` is one)."""

    async def tell(self, notice: Notice) -> None:
        """Show ``notice`` as the client takes it (see the module contract)."""
        ...


def notice_update(notice: Notice) -> acp.NoticeSessionUpdate:
    """The ``notice`` update of ``notice``, for a client that opted in."""
    return acp.NoticeSessionUpdate(
        session_update="notice",
        severity=notice.severity,
        title=notice.title.strip() or notice.severity,
        description=notice.text,
    )
