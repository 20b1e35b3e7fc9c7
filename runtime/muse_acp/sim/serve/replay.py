"""``muse-sim serve --replay FILE``: a recorded MSP conversation played back to a live client.

Contract: FILE is a transcript, one ``{"dir": "client"|"server", "raw": "<JSON-RPC line>"}`` per
line (the format of the official MSP transcripts). Server frames recorded before the first
client frame are sent at once. Each frame the live client sends is matched with the next
recorded client frame of the same kind (same method, or a response), skipping recorded frames
the client did not send, and answered with the server frames recorded after it, up to the next
recorded client frame; a recorded response to that client request is given the id the live
client used. A live request with no recorded counterpart is answered -32603 (``kind``
``internal``); an unmatched notification or response is ignored. Frames are otherwise sent
exactly as recorded, ``emittedAtMs`` included.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from muse_acp.rpc import (
    FrameReader,
    FrameWriter,
    OversizedFrame,
    RequestId,
    encode_error,
    encode_message,
    open_stdio,
)
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.sim.state import errors

__all__ = ["Recorded", "Transcript", "load_transcript", "run_replay"]

RESPONSE: Final = "(response)"
UNREADABLE: Final = "(unreadable)"


def _classify(raw: bytes) -> tuple[str, RequestId | None]:
    """A frame's kind (its method, a response or unreadable) and its id, if usable."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return UNREADABLE, None
    if not isinstance(message, dict):
        return UNREADABLE, None
    raw_id = message.get("id")
    frame_id = raw_id if type(raw_id) is int or type(raw_id) is str else None
    method = message.get("method")
    if isinstance(method, str):
        return method, frame_id
    return RESPONSE, frame_id


@dataclass(frozen=True, slots=True)
class Recorded:
    """A recorded client frame and the server frames recorded after it."""

    kind: str
    request_id: RequestId | None
    answers: tuple[bytes, ...]


@dataclass(slots=True)
class Transcript:
    opening: list[bytes] = field(default_factory=list)
    """Server frames recorded before any client frame."""
    turns: list[Recorded] = field(default_factory=list)


def load_transcript(path: Path) -> Transcript:
    """Read a transcript file; raises ``ValueError`` when a line is not a transcript entry."""
    transcript = Transcript()
    pending: tuple[str, RequestId | None] | None = None
    answers: list[bytes] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            entry: Any = json.loads(line)
            if not isinstance(entry, dict) or not isinstance(entry.get("raw"), str):
                raise ValueError(f"{path}:{number}: not a transcript entry")
            raw = entry["raw"].rstrip("\r\n").encode()
            if entry.get("dir") == "server":
                (answers if pending is not None else transcript.opening).append(raw)
            elif entry.get("dir") == "client":
                if pending is not None:
                    transcript.turns.append(Recorded(*pending, tuple(answers)))
                pending, answers = _classify(raw), []
            else:
                raise ValueError(f"{path}:{number}: dir must be client or server")
    if pending is not None:
        transcript.turns.append(Recorded(*pending, tuple(answers)))
    return transcript


def _with_id(frame: bytes, recorded: RequestId | None, live: RequestId | None) -> bytes:
    kind, frame_id = _classify(frame)
    if kind != RESPONSE or live is None or frame_id != recorded or recorded == live:
        return frame
    message = json.loads(frame)
    message["id"] = live
    return encode_message(message)


async def _play(transcript: Transcript) -> None:
    async with open_stdio() as (receive, send):
        reader = FrameReader(receive)
        writer = FrameWriter(send)
        for frame in transcript.opening:
            await writer.send(frame)
        position = 0
        async for line in reader:
            if isinstance(line, OversizedFrame):
                continue
            kind, live_id = _classify(line)
            turns = transcript.turns
            match = next((i for i in range(position, len(turns)) if turns[i].kind == kind), None)
            if match is None:
                if kind not in (RESPONSE, UNREADABLE) and live_id is not None:
                    error = errors.internal(f"muse-sim replay has no recorded answer to {kind}")
                    await writer.send(encode_error(live_id, error))
                continue
            position = match + 1
            recorded = turns[match]
            for answer in recorded.answers:
                await writer.send(_with_id(answer, recorded.request_id, live_id))


def run_replay(options: ServeOptions) -> int:
    """Play back ``options.replay`` on stdin/stdout until stdin ends."""
    assert options.replay is not None
    try:
        transcript = load_transcript(options.replay)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"muse-sim: cannot replay: {exc}\n")
        return 2
    try:
        anyio.run(_play, transcript)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return 0
    return 0
