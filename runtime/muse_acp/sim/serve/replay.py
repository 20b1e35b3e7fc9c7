"""``muse-sim serve --replay FILE [--pace FACTOR]``: a recorded MSP conversation played back.

Contract: FILE is a transcript (``{"dir": "client"|"server", "raw": "<JSON-RPC line>"}`` lines,
the official MSP transcripts' format) or a muse-acp trace (its first host's frames). A
``Player`` sends the server frames recorded before the first client frame, then matches each
live client frame with the next recorded client frame of the same kind (method, or a response
to the same request, even one passed over), skipping recorded ones the client did not send, and
answers with the server frames recorded after it (a response under the live id). A live request
with no counterpart is answered -32603 (``internal``); an unmatched notification or response is
ignored; both, skipped requests and requests ``compare`` finds sent otherwise are noted in
``departures``. Frames go as recorded; with ``learn``, values the live client wrote in place of
recorded ones replace them in the answers. With ``pace`` (0: off) and recorded times (a trace's
``t``), each server frame first waits ``pace`` times the recorded interval since the frame
before it (the request it answers, or the previous answer), at most ``MAX_PAUSE`` seconds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

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

__all__ = [
    "MAX_PAUSE",
    "Player",
    "Recorded",
    "Transcript",
    "load_transcript",
    "run_replay",
    "transcript_of",
]

MAX_PAUSE: Final = 5.0
"""The longest single wait of a paced replay, in seconds, whatever the recording says."""

RESPONSE: Final = "(response)"
UNREADABLE: Final = "(unreadable)"
_TRACE_LINES: Final = frozenset({"on", "trace", "decision", "log", "end", "capped", "dropped"})
"""Members that make a line one of a muse-acp trace."""


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
    raw: bytes = b""
    """The recorded client frame itself."""
    at: float | None = None
    """When the client frame was recorded, in milliseconds (None: not recorded)."""
    times: tuple[float | None, ...] = ()
    """When each answer was recorded, in milliseconds (empty: not recorded)."""


@dataclass(slots=True)
class Transcript:
    opening: list[bytes] = field(default_factory=list)
    """Server frames recorded before any client frame."""
    turns: list[Recorded] = field(default_factory=list)
    opening_times: list[float | None] = field(default_factory=list)
    """When each opening frame was recorded, in milliseconds."""


def transcript_of(
    entries: Iterable[tuple[str, bytes]], times: Iterable[float | None] = ()
) -> Transcript:
    """A transcript of ``(dir, raw)`` entries in recorded order, ``dir`` client or server, each
    recorded at the matching one of ``times`` (milliseconds; none given: not recorded)."""
    transcript = Transcript()
    pending: tuple[str, RequestId | None] | None = None
    answers: list[bytes] = []
    answered: list[float | None] = []
    pending_raw = b""
    pending_at: float | None = None
    clock = iter(times)
    for direction, raw in entries:
        at = next(clock, None)
        if direction == "server":
            (answers if pending is not None else transcript.opening).append(raw)
            (answered if pending is not None else transcript.opening_times).append(at)
        else:
            if pending is not None:
                transcript.turns.append(
                    Recorded(*pending, tuple(answers), pending_raw, pending_at, tuple(answered))
                )
            pending, answers, pending_raw = _classify(raw), [], raw
            answered, pending_at = [], at
    if pending is not None:
        transcript.turns.append(
            Recorded(*pending, tuple(answers), pending_raw, pending_at, tuple(answered))
        )
    return transcript


def _entry(path: Path, number: int, entry: Any, host: str) -> tuple[str, bytes] | None:
    if isinstance(entry, dict) and "raw" not in entry and entry.keys() & _TRACE_LINES:
        if entry.get("on") != host or "frame" not in entry:
            return None  # a line of a muse-acp trace that is not one of this host's frames
        return ("client" if entry.get("dir") == "out" else "server"), encode_message(entry["frame"])
    if not isinstance(entry, dict) or not isinstance(entry.get("raw"), str):
        raise ValueError(f"{path}:{number}: not a transcript entry")
    if entry.get("dir") not in ("client", "server"):
        raise ValueError(f"{path}:{number}: dir must be client or server")
    return entry["dir"], entry["raw"].rstrip("\r\n").encode()


def load_transcript(path: Path, host: str = "msp1") -> Transcript:
    """Read a transcript file, or the frames of ``host`` in a muse-acp trace (its other lines
    are skipped); raises ``ValueError`` when a line is neither."""
    entries: list[tuple[str, bytes]] = []
    times: list[float | None] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                entry = json.loads(line)
                found = _entry(path, number, entry, host)
                if found is not None:
                    entries.append(found)
                    times.append(_time(entry))
    return transcript_of(entries, times)


def _time(entry: Any) -> float | None:
    """When a trace recorded the line (its ``t``, milliseconds), if it says."""
    at = entry.get("t") if isinstance(entry, dict) else None
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None


def _with_id(frame: bytes, recorded: RequestId | None, live: RequestId | None) -> bytes:
    kind, frame_id = _classify(frame)
    if kind != RESPONSE or live is None or frame_id != recorded or recorded == live:
        return frame
    message = json.loads(frame)
    message["id"] = live
    return encode_message(message)


def _learn(recorded: Any, live: Any, into: dict[str, str]) -> None:
    """Pair each string of a recorded client frame with the one the live client wrote there
    (the ids it made anew: sessions, commands), so later recorded answers can carry them."""
    if isinstance(recorded, str) and isinstance(live, str):
        if recorded != live:
            into.setdefault(recorded, live)
    elif isinstance(recorded, dict) and isinstance(live, dict):
        for key in recorded.keys() & live.keys():
            _learn(recorded[key], live[key], into)
    elif isinstance(recorded, list) and isinstance(live, list):
        for pair in zip(recorded, live, strict=False):
            _learn(*pair, into)


def _substituted(value: Any, learned: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return learned.get(value, value)
    if isinstance(value, dict):
        return {key: _substituted(item, learned) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, learned) for item in value]
    return value


@dataclass(slots=True)
class Player:
    """Plays a transcript to one live client (see the module contract) and keeps what departed
    from it: ``departures``, each a sentence naming the frame."""

    transcript: Transcript
    name: str = "host"
    learn: bool = False
    """Carry values the live client wrote in place of recorded ones (its own ids) into the
    recorded answers (a trace's replay: ``muse_acp.traces``); off for plain transcripts."""
    departures: list[str] = field(default_factory=list)
    learned: dict[str, str] = field(default_factory=dict)
    """Recorded value -> the live one (may be shared by the players of one recording)."""
    pace: float = 0.0
    """The recorded intervals' factor (0: answer at once)."""
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    """How a paced wait is waited (a test's clock may stand in)."""
    compare: Callable[[bytes, bytes], str | None] | None = None
    """Why a live client frame differs from the recorded one it was matched with (None: it
    does not); each difference is a departure."""
    _position: int = 0
    _passed: list[int] = field(default_factory=list)
    """Recorded responses passed over (the client answered later than recorded), by index."""

    def missing(self) -> list[str]:
        """The recorded client frames the live client has not sent (so far)."""
        return [
            f"{self.name}: muse-acp never sent {turn.kind} (recorded client frame {i + 1})"
            for i, turn in enumerate(self.transcript.turns[self._position :], self._position)
            if turn.kind != RESPONSE
        ]

    async def play(self, receive: ByteReceiveStream, send: ByteSendStream) -> None:
        """Answer the live client on ``receive``/``send`` until its input ends."""
        reader = FrameReader(receive)
        writer = FrameWriter(send)
        times = self.transcript.opening_times
        previous = times[0] if times else None
        for index, frame in enumerate(self.transcript.opening):
            at = times[index] if index < len(times) else None
            await self._wait(previous, at)
            previous = at
            await writer.send(self._answer(frame))
        async for line in reader:
            if isinstance(line, OversizedFrame):
                continue
            kind, live_id = _classify(line)
            turns = self.transcript.turns
            start = self._position
            late = self._late_response(kind, live_id)
            match = late if late is not None else self._next(kind, live_id)
            if match is None:
                if kind != RESPONSE:
                    self.departures.append(f"{self.name}: muse-acp sent {kind}, not in the trace")
                if kind not in (RESPONSE, UNREADABLE) and live_id is not None:
                    error = errors.internal(f"muse-sim replay has no recorded answer to {kind}")
                    await writer.send(encode_error(live_id, error))
                continue
            if late is None:
                self.departures += [
                    f"{self.name}: muse-acp never sent {turn.kind} (recorded client frame {i + 1})"
                    for i, turn in enumerate(turns[start:match], start)
                    if turn.kind != RESPONSE
                ]
                self._passed += [i for i in range(start, match) if turns[i].kind == RESPONSE]
                self._position = match + 1
            recorded = turns[match]
            why = self.compare(recorded.raw, line) if self.compare and recorded.raw else None
            if why is not None:
                self.departures.append(
                    f"{self.name}: muse-acp sent {kind} (recorded client frame {match + 1}) "
                    f"otherwise: {why}"
                )
            if self.learn and recorded.raw:
                _learn(json.loads(recorded.raw), json.loads(line), self.learned)
            previous = recorded.at
            for index, answer in enumerate(recorded.answers):
                at = recorded.times[index] if index < len(recorded.times) else None
                await self._wait(previous, at)
                previous = at
                await writer.send(_with_id(self._answer(answer), recorded.request_id, live_id))

    def _late_response(self, kind: str, live_id: RequestId | None) -> int | None:
        """The passed-over recorded response to the same request as a live response, if any:
        the client answered the host's request after a command recorded after the answer."""
        turns = self.transcript.turns
        if kind != RESPONSE or live_id is None:
            return None
        found = next((i for i in self._passed if turns[i].request_id == live_id), None)
        if found is not None:
            self._passed.remove(found)
        return found

    def _next(self, kind: str, live_id: RequestId | None) -> int | None:
        """The next recorded client frame of ``kind`` (a response: to the same request, if one
        is recorded)."""
        turns = self.transcript.turns
        ahead = range(self._position, len(turns))
        if kind == RESPONSE:
            same = next(
                (i for i in ahead if turns[i].kind == kind and turns[i].request_id == live_id), None
            )
            if same is not None:
                return same
        return next((i for i in ahead if turns[i].kind == kind), None)

    async def _wait(self, previous: float | None, at: float | None) -> None:
        """Wait the recorded interval from ``previous`` to ``at`` (ms), paced and capped."""
        if self.pace <= 0 or previous is None or at is None or at <= previous:
            return
        await self.sleep(min((at - previous) / 1000 * self.pace, MAX_PAUSE))

    def _answer(self, frame: bytes) -> bytes:
        if not self.learned:
            return frame
        return encode_message(_substituted(json.loads(frame), self.learned))


async def _play(transcript: Transcript, pace: float) -> None:
    async with open_stdio() as (receive, send):
        await Player(transcript, pace=pace).play(receive, send)


def run_replay(options: ServeOptions) -> int:
    """Play back ``options.replay`` on stdin/stdout until stdin ends, paced by
    ``options.pace``."""
    assert options.replay is not None
    try:
        transcript = load_transcript(options.replay)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"muse-sim: cannot replay: {exc}\n")
        return 2
    try:
        anyio.run(_play, transcript, options.pace)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return 0
    return 0
