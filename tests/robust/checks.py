"""Checks every robustness suite applies to what the agent wrote.

Contract: ``deliver(agent, pieces, expectations)`` writes a burst (in the given pieces), waits
until every expected response arrived, then proves nothing more is coming for the burst: a
barrier request sent after it is answered, and, since the agent answers unusable frames and runs
notifications in arrival order, any stray answer would have been written before the barrier's.
It returns the burst's responses by id key. ``problems_in`` lists what is wrong with a set of
stdout lines: a line that is not a JSON-RPC 2.0 frame, or an error whose message leaks internals
(a traceback, pydantic's wording or a documentation URL) or is unreasonably long.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .oracle import BurstExpectations
from .rawagent import DRIVER_PREFIX, RawAgent

__all__ = ["MAX_ERROR_FRAME_BYTES", "deliver", "frame_problem", "problems_in"]

MAX_ERROR_FRAME_BYTES: Final = 4096
"""Longest error response accepted: an error says what is wrong, it does not quote the input."""

LEAK_MARKERS: Final = (
    "Traceback",
    'File "',
    "pydantic",
    "Pydantic",
    "validation error",
    "Input should",
    "input_value",
    "errors.pydantic.dev",
    "RecursionError",
    "UnicodeEncodeError",
    "Exception",
)


def frame_problem(line: bytes) -> str | None:
    """Why ``line`` is not an acceptable JSON-RPC 2.0 frame from the agent, or None."""
    try:
        message = json.loads(line)
    except ValueError:
        return f"not JSON: {line[:200]!r}"
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return f"not a JSON-RPC 2.0 message: {line[:200]!r}"
    if "method" in message:
        if not isinstance(message["method"], str) or "result" in message or "error" in message:
            return f"malformed request or notification: {line[:200]!r}"
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return f"malformed response: {line[:200]!r}"
    error = message.get("error")
    if error is None:
        return None
    if not isinstance(error, dict) or type(error.get("code")) is not int:
        return f"malformed error object: {line[:200]!r}"
    text = line.decode("utf-8")
    leaked = [marker for marker in LEAK_MARKERS if marker in text]
    if leaked:
        return f"error leaks internals ({', '.join(leaked)}): {line[:400]!r}"
    if len(line) > MAX_ERROR_FRAME_BYTES:
        return f"error response of {len(line)} bytes: {line[:200]!r}"
    return None


def problems_in(lines: Iterable[bytes]) -> list[str]:
    return [problem for line in lines if (problem := frame_problem(line)) is not None]


async def deliver(
    agent: RawAgent, pieces: Sequence[bytes], expected: BurstExpectations
) -> dict[str, list[dict[str, Any]]]:
    """Write ``pieces``, wait for the burst's answers and a barrier; return the new responses."""
    before = {key: len(found) for key, found in agent.responses.items()}
    for piece in pieces:
        await agent.write(piece)
    await agent.wait_for_responses(
        Counter({key: before.get(key, 0) + n for key, n in expected.counts().items()})
    )
    barrier = await agent.request("_robust/barrier")
    assert barrier.get("error", {}).get("code") == -32601, barrier
    return {
        key: found[before.get(key, 0) :]
        for key, found in agent.responses.items()
        if len(found) > before.get(key, 0) and not key.startswith(f'"{DRIVER_PREFIX}')
    }
