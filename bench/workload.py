"""The echo workload every runtime-throughput peer serves, defined once.

Contract: a client sends ``initialize``, ``session/new`` and then prompts whose only text block
is a decimal count N; the agent answers each prompt with N ``agent_message_chunk`` updates
(``chunk_text(0)`` .. ``chunk_text(N - 1)``, each its own ``session/update`` notification) and
then ``stopReason: end_turn``. ``update_params`` is the exact params object of the i-th update,
so a peer that sends pre-serialized frames sends what the others build.
"""

from __future__ import annotations

from typing import Final

from muse_acp.rpc import JsonObject

__all__ = [
    "MAX_UPDATES_PER_PROMPT",
    "SESSION_ID",
    "chunk_text",
    "prompt_params",
    "requested_updates",
    "update_params",
]

SESSION_ID: Final = "echo-session-1"
MAX_UPDATES_PER_PROMPT: Final = 1_000_000


def chunk_text(index: int) -> str:
    """The text of the ``index``-th chunk: about the size of one model token, plus a counter."""
    return f"tok{index} "


def update_params(index: int) -> JsonObject:
    return {
        "sessionId": SESSION_ID,
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": chunk_text(index)},
        },
    }


def prompt_params(updates: int) -> JsonObject:
    return {"sessionId": SESSION_ID, "prompt": [{"type": "text", "text": str(updates)}]}


def requested_updates(text: str) -> int:
    """The count a prompt asks for (a malformed or excessive one is refused with ValueError)."""
    count = int(text.strip()) if text.strip().isdigit() and len(text.strip()) <= 7 else -1
    if not 0 <= count <= MAX_UPDATES_PER_PROMPT:
        raise ValueError(f"a prompt must be a count of updates up to {MAX_UPDATES_PER_PROMPT}")
    return count
