"""A typed, async client library for ACP agents such as ``muse-acp serve``.

Scripts open a connection with ``connect`` (a child process, by default this installation's
``muse-acp serve``) or ``connect_streams`` (streams they own), then work with typed sessions
(``AgentConnection.new_session``, ``Session.prompt``). Everything sent and received is a
generated ACP model (``muse_acp_wire.acp``). Agent errors are raised as ``AgentError`` (an
``RpcError``) and a vanished agent as ``AgentExited`` (a ``ConnectionClosed``), both with the
agent's last stderr lines. The Muse extensions are opted into with ``extensions()`` and used
through ``Session.read_output``, ``Session.save_output``, ``Session.steer`` and
``Session.compatible_steer``.
"""

from muse_acp.client.capabilities import client_capabilities, extensions, with_elicitation
from muse_acp.client.connect import (
    DEFAULT_MAX_BUFFERED_UPDATES,
    DEFAULT_STARTUP_TIMEOUT,
    PROTOCOL_VERSION,
    connect,
    connect_streams,
    default_command,
)
from muse_acp.client.connection import AgentConnection, PendingResult
from muse_acp.client.errors import AgentError, AgentExited, Diagnostics, NoDiagnostics
from muse_acp.client.output import (
    MAX_PAGE_BYTES,
    OutputRef,
    PendingPage,
    decode_page,
    output_ref,
)
from muse_acp.client.policies import (
    ElicitationHandler,
    PermissionHandler,
    PermissionKind,
    allow_always,
    allow_once,
    cancel_all,
    choose_kind,
    reject_always,
    reject_once,
)
from muse_acp.client.process import AgentProcess, StderrHandler, forward_to_stderr
from muse_acp.client.session import (
    Prompt,
    Session,
    SessionConnection,
    UpdateHandler,
    content_blocks,
)
from muse_acp.client.updates import message_text, parse_update

__all__ = [
    "DEFAULT_MAX_BUFFERED_UPDATES",
    "DEFAULT_STARTUP_TIMEOUT",
    "MAX_PAGE_BYTES",
    "PROTOCOL_VERSION",
    "AgentConnection",
    "AgentError",
    "AgentExited",
    "AgentProcess",
    "Diagnostics",
    "ElicitationHandler",
    "NoDiagnostics",
    "OutputRef",
    "PendingPage",
    "PendingResult",
    "PermissionHandler",
    "PermissionKind",
    "Prompt",
    "Session",
    "SessionConnection",
    "StderrHandler",
    "UpdateHandler",
    "allow_always",
    "allow_once",
    "cancel_all",
    "choose_kind",
    "client_capabilities",
    "connect",
    "connect_streams",
    "content_blocks",
    "decode_page",
    "default_command",
    "extensions",
    "forward_to_stderr",
    "message_text",
    "output_ref",
    "parse_update",
    "reject_always",
    "reject_once",
    "with_elicitation",
]
