"""The echo agent (see ``workload``) on the official ACP Python SDK: ``python -m bench.echo_sdk``.

Written the way the SDK's own examples write agents: an ``acp.Agent`` run by ``run_agent``, each
update built with the SDK's helpers and sent with ``session_update``.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import acp
from acp import schema

from bench.workload import SESSION_ID, chunk_text, requested_updates


class EchoAgent:
    def __init__(self) -> None:
        self._client: acp.Client | None = None

    def on_connect(self, conn: acp.Client) -> None:
        self._client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        return schema.InitializeResponse(protocol_version=acp.PROTOCOL_VERSION)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[
            schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer | schema.McpServerStdio
        ]
        | None = None,
        **kwargs: Any,
    ) -> schema.NewSessionResponse:
        return schema.NewSessionResponse(session_id=SESSION_ID)

    async def prompt(
        self,
        session_id: str,
        prompt: list[
            schema.TextContentBlock
            | schema.ImageContentBlock
            | schema.AudioContentBlock
            | schema.ResourceContentBlock
            | schema.EmbeddedResourceContentBlock
        ],
        **kwargs: Any,
    ) -> schema.PromptResponse:
        assert self._client is not None
        block = prompt[0] if prompt else None
        if not isinstance(block, schema.TextContentBlock):
            raise acp.RequestError.invalid_params({"prompt": "one text block"})
        for index in range(requested_updates(block.text)):
            await self._client.session_update(
                session_id=session_id, update=acp.update_agent_message_text(chunk_text(index))
            )
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    # The SDK types an agent as a protocol of every ACP method; this one serves three, and the
    # SDK answers the others METHOD_NOT_FOUND.
    asyncio.run(acp.run_agent(cast("acp.Agent", EchoAgent())))
