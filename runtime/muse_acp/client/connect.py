"""Opening a client connection: to an agent child process (``connect``) or over streams.

Contract: ``connect`` starts the agent command (by default this installation's
``muse-acp serve``) as a child process, ``connect_streams`` uses byte streams the caller owns;
both connect the JSON-RPC runtime, send ``initialize`` within ``startup_timeout`` seconds and
yield the ``AgentConnection``. Leaving the block closes the connection and, for ``connect``,
reaps the child and its process group, whether the block ended normally, by an error or by
cancellation. An agent that answers with a protocol version other than ``PROTOCOL_VERSION`` is
refused.

Capabilities default to ``client_capabilities``: no file system, no terminal, and form
elicitations when ``on_elicitation`` is given (also added to explicit capabilities that say
nothing about elicitation).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp import __version__
from muse_acp.client.capabilities import client_capabilities, with_elicitation
from muse_acp.client.connection import AgentConnection
from muse_acp.client.errors import AgentError, Diagnostics, NoDiagnostics
from muse_acp.client.policies import ElicitationHandler, PermissionHandler
from muse_acp.client.process import StderrHandler, forward_to_stderr, spawn_agent
from muse_acp.rpc import RpcError
from muse_acp.tasks import task_group
from muse_acp_wire import acp

__all__ = [
    "CLIENT_NAME",
    "DEFAULT_MAX_BUFFERED_UPDATES",
    "DEFAULT_STARTUP_TIMEOUT",
    "PROTOCOL_VERSION",
    "connect",
    "connect_streams",
    "default_command",
]

PROTOCOL_VERSION: Final = 1
CLIENT_NAME: Final = "muse-acp-client"
DEFAULT_STARTUP_TIMEOUT: Final = 60.0
"""Seconds the agent gets to start and answer ``initialize``."""
DEFAULT_MAX_BUFFERED_UPDATES: Final = 256
"""Updates a prompt holds for a slow reader before reading from the agent pauses."""


def default_command() -> list[str]:
    """``muse-acp serve`` of this very installation."""
    return [sys.executable, "-m", "muse_acp", "serve"]


def _initialize_request(
    capabilities: acp.ClientCapabilities | None, elicitation: bool
) -> acp.InitializeRequest:
    if capabilities is None:
        capabilities = client_capabilities(elicitation=elicitation)
    elif elicitation:
        capabilities = with_elicitation(capabilities)
    return acp.InitializeRequest(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=acp.Implementation(
            name=CLIENT_NAME, title="muse-acp client", version=__version__
        ),
    )


@asynccontextmanager
async def connect_streams(
    receive: ByteReceiveStream,
    send: ByteSendStream,
    *,
    capabilities: acp.ClientCapabilities | None = None,
    on_permission: PermissionHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    max_buffered_updates: int = DEFAULT_MAX_BUFFERED_UPDATES,
    diagnostics: Diagnostics | None = None,
) -> AsyncIterator[AgentConnection]:
    """Initialize the agent reachable through ``receive``/``send`` and yield the connection.

    Raises:
        TimeoutError: ``initialize`` was not answered within ``startup_timeout`` seconds.
        AgentError: the agent refused ``initialize`` or speaks another protocol version.
        AgentExited: the agent went away before answering.
    """
    async with task_group() as tasks:
        agent = AgentConnection(
            receive,
            send,
            tasks,
            diagnostics=diagnostics or NoDiagnostics(),
            on_permission=on_permission,
            on_elicitation=on_elicitation,
            max_buffered_updates=max_buffered_updates,
        )
        await tasks.start(agent.connection.serve)
        try:
            with anyio.fail_after(startup_timeout):
                request = _initialize_request(capabilities, on_elicitation is not None)
                response = await agent.request("initialize", request, acp.InitializeResponse)
            if response.protocol_version != PROTOCOL_VERSION:
                refusal = RpcError.internal_error(
                    f"the agent speaks ACP version {response.protocol_version}; this client "
                    f"speaks version {PROTOCOL_VERSION}"
                )
                raise AgentError(refusal, agent.stderr_lines())
            agent.initialize_response = response
            yield agent
        finally:
            agent.mark_closed()
            await agent.connection.aclose()
            tasks.cancel_scope.cancel()


@asynccontextmanager
async def connect(
    command: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    capabilities: acp.ClientCapabilities | None = None,
    on_permission: PermissionHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    on_stderr: StderrHandler = forward_to_stderr,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    max_buffered_updates: int = DEFAULT_MAX_BUFFERED_UPDATES,
) -> AsyncIterator[AgentConnection]:
    """Start an agent (default: ``muse-acp serve``), initialize it and yield the connection.

    ``env`` entries are laid over this process's environment; ``cwd`` is the agent's working
    directory; each line the agent writes to stderr goes to ``on_stderr`` (default: this
    process's stderr) and the last ones are kept for error reports.

    Raises:
        OSError: the command could not be started.
        TimeoutError: ``initialize`` was not answered within ``startup_timeout`` seconds.
        AgentError: the agent refused ``initialize`` or speaks another protocol version.
        AgentExited: the agent exited before answering.
    """
    argv = list(command) if command is not None else default_command()
    async with (
        spawn_agent(argv, env=env, cwd=cwd, on_stderr=on_stderr) as process,
        connect_streams(
            process.stdout,
            process.stdin,
            capabilities=capabilities,
            on_permission=on_permission,
            on_elicitation=on_elicitation,
            startup_timeout=startup_timeout,
            max_buffered_updates=max_buffered_updates,
            diagnostics=process,
        ) as agent,
    ):
        yield agent
