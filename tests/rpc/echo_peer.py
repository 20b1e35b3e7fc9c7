"""A JSON-RPC peer serving on this process's stdio; the stdio tests run it as a child process.

``echo`` first sends a ``progress`` notification with the size of its params, then returns
them; ``ask`` requests ``name`` from the parent and greets it. It exits at end of input.
"""

from __future__ import annotations

import anyio

from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    JsonValue,
    RequestContext,
    Result,
    RpcError,
    encode_message,
    open_stdio,
)


class EchoPeer:
    def __init__(self) -> None:
        self.conn: Connection | None = None

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        assert self.conn is not None
        if method == "echo":
            await self.conn.notify("progress", {"size": len(encode_message(params))})
            return params
        if method == "ask":
            return {"hello": await self.conn.request("name")}
        raise RpcError.method_not_found(method)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        pass


async def main() -> None:
    peer = EchoPeer()
    async with open_stdio() as (receive, send):
        peer.conn = Connection(FrameReader(receive), FrameWriter(send), peer, name="echo-peer")
        await peer.conn.serve()
        await peer.conn.aclose()


if __name__ == "__main__":
    anyio.run(main)
