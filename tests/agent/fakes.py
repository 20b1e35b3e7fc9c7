"""Small real objects the agent's unit tests build sessions with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.rpc import Payload, RawJson, encode_message
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp


@dataclass
class RecordingClient:
    """A client link that records every notification and refuses requests it was not given."""

    notified: list[tuple[str, Payload]] = field(default_factory=list)

    async def notify(self, method: str, params: Payload = None) -> None:
        self.notified.append((method, params))

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        message = json.loads(frame)
        self.notified.append((message["method"], RawJson(encode_message(message["params"]))))
        return True

    async def request(self, method: str, params: Payload = None) -> JsonValue:
        raise AssertionError(f"no client request expected, got {method}")

    def updates(self) -> list[acp.SessionUpdate]:
        """Every ``session/update`` sent, read back as the client reads it: from a model, or
        from the JSON a plain text chunk is sent as."""
        read = []
        for method, params in self.notified:
            if method != "session/update":
                continue
            if isinstance(params, RawJson):
                read.append(acp.SessionNotification.model_validate_json(params.data).update)
            else:
                assert isinstance(params, acp.SessionNotification), params
                read.append(params.update)
        return read


def add_session(ctx: AgentContext, session_id: str, cwd: str = "/") -> AcpSession:
    """Register a session of ``ctx`` that talks to a ``RecordingClient``."""
    return ctx.sessions.add(AcpSession(session_id, cwd, RecordingClient(), ctx.hosting))
