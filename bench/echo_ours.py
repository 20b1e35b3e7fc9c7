"""The echo agent (``workload``) on muse-acp's own JSON-RPC runtime: ``python -m bench.echo_ours``.

It is built the way ``muse-acp serve`` is: stdio through ``open_stdio`` with output written
through ``coalescing``, typed routes validating into the generated ACP models, and every update a
generated model sent with ``notify``, encoded as a session of ``muse-acp serve`` encodes it: a
plain text chunk through its template (``agent.chunk_frames``), which writes the very bytes the
``SessionNotification`` model would.
"""

from __future__ import annotations

import anyio

from bench.workload import SESSION_ID, chunk_text, requested_updates
from muse_acp.agent.translation.chunk_frames import encoded_chunk, encoded_session_id
from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    RequestContext,
    RequestRoute,
    Router,
    RpcError,
    coalescing,
    open_stdio,
)
from muse_acp_wire import acp


class EchoAgent:
    def __init__(self) -> None:
        self.connection: Connection | None = None

    async def initialize(
        self, params: acp.InitializeRequest, _: RequestContext
    ) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def new_session(
        self, params: acp.NewSessionRequest, _: RequestContext
    ) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=SESSION_ID)

    async def prompt(self, params: acp.PromptRequest, _: RequestContext) -> acp.PromptResponse:
        assert self.connection is not None
        block = params.prompt[0] if params.prompt else None
        if not isinstance(block, acp.TextContentBlock):
            raise RpcError.invalid_params("the prompt must be one text block")
        try:
            count = requested_updates(block.text)
        except ValueError as error:
            raise RpcError.invalid_params(str(error)) from None
        session_id = encoded_session_id(params.session_id)
        for index in range(count):
            update = acp.AgentMessageChunkSessionUpdate(
                session_update="agent_message_chunk",
                content=acp.TextContentBlock(type="text", text=chunk_text(index)),
            )
            await self.connection.notify(
                "session/update",
                encoded_chunk(session_id, update)
                or acp.SessionNotification(session_id=params.session_id, update=update),
            )
        return acp.PromptResponse(stop_reason="end_turn")

    def router(self) -> Router:
        return Router(
            [
                RequestRoute("initialize", acp.InitializeRequest, self.initialize),
                RequestRoute("session/new", acp.NewSessionRequest, self.new_session),
                RequestRoute("session/prompt", acp.PromptRequest, self.prompt),
            ]
        )


async def serve() -> None:
    agent = EchoAgent()
    async with open_stdio() as (receive, send), coalescing(send) as output:
        agent.connection = Connection(
            FrameReader(receive), FrameWriter(output), agent.router(), name="echo"
        )
        await agent.connection.serve()


if __name__ == "__main__":
    anyio.run(serve)
