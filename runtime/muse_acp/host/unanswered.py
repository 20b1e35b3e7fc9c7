"""Host requests muse-acp cannot answer: refused at once, and reported to the session.

Contract: ``RefusingUnknown`` wraps a connection's ``Router``. A request the router has a route
for is served as before. A server request with a method muse-acp has no route for (a newer
host asking for something this version does not know) is answered METHOD_NOT_FOUND at once, so
the host never waits on us; and, when its params name a ``sessionId``, an ``UnansweredRequest``
is first handed to ``report`` for that session. A host that asked usually cannot go on without
the answer, so the session's running turn must not wait on it either: it fails the turn (see
``agent.turn``), which is quicker and clearer than letting the silence watchdog notice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from muse_acp.rpc import RequestContext, Result, Router, RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire._base import WireModel

__all__ = ["RefusingUnknown", "UnansweredRequest"]

METHOD_SHOWN = 200
"""Longest method name carried in a report (a host's method is host text)."""


class UnansweredRequest(WireModel):
    """A server request of the host that muse-acp refused because it cannot answer it."""

    session_id: str
    method: str


class RefusingUnknown:
    """A ``MessageHandler``: ``router``, plus the refusal and report of unknown requests."""

    def __init__(
        self, router: Router, report: Callable[[str, UnansweredRequest], Awaitable[None]]
    ) -> None:
        self._router = router
        self._report = report

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        if method not in self._router.requests:
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            if isinstance(session_id, str) and session_id:
                shown = method[:METHOD_SHOWN]
                await self._report(shown, UnansweredRequest(session_id=session_id, method=shown))
            raise RpcError.method_not_found(method)
        return await self._router.handle_request(method, params, ctx)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        await self._router.handle_notification(method, params)
