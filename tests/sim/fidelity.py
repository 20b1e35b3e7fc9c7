"""Driving the simulator with the client side of a recorded MSP conversation, and comparing.

``Replayer`` sends the recorded client frames of one connection to a live simulator, in order,
with the ids the recording learned from its host (session, turn, item, approval and question ids,
cursors) rewritten to the ones the simulator gave out. It learns those by pairing every frame the
simulator sends with the next recorded host frame of the same kind (the response to the same
request; the same method and item kind otherwise) and walking both side by side.

Every simulator frame is validated with the generated bindings of the simulated version and
compared (see ``shapes``) with its recorded counterpart, or, when the recording has none, with
the first recorded frame of that kind in the same family of captures: the same member names,
and for real host logs in the same order (official transcripts were written with sorted keys, so
only member sets are compared for them). What cannot be reproduced (methods the simulator does
not serve, frames that depend on them, sessions created outside the recording) is reported, not
hidden.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final

import anyio
from pydantic import ValidationError

from .captures import Recorded
from .harness import Frame
from .runs import SimRun
from .shapes import ID, compare, ids_in, kind_key, same_variant

ANSWER_WAIT: Final = 30.0
"""Seconds the simulator may take to send what the replay waits for (an answer, an id a
recorded client frame needs, the last exchange's events); the first includes starting the
simulator, which takes several seconds on a loaded two-core machine running other tests'
processes. Only a simulator that stopped reaches it, and that fails the replay: no outcome
depends on how fast the simulator is."""

SIMULATOR_EMITS: Final = frozenset(
    {
        "session/started",
        "turn/started",
        "turn/completed",
        "turn/retracted",
        "turn/unqueued",
        "item/started",
        "item/updated",
        "item/completed",
        "item/delta",
        "approval/requested",
        "approval/updated",
        "approval/resolved",
        "userInput/requested",
        "userInput/settled",
        "session/tokenUsage",
        "session/contextUsage",
        "session/todoListChanged",
        "session/modelChanged",
        "session/approvalModeChanged",
        "session/nameChanged",
        "session/reasoningEffortChanged",
    }
)


@dataclass
class Report:
    """What one connection's replay found."""

    name: str
    unsupported: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)
    unverified: set[str] = field(default_factory=set)
    divergences: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    checked: int = 0


class Replayer:
    """Replays one recorded connection against a live simulator (see the module docstring)."""

    def __init__(
        self,
        report: Report,
        frames: list[Recorded],
        sim: SimRun,
        wire: ModuleType,
        *,
        ordered: bool,
        library: Mapping[str, Recorded],
        directives: Mapping[tuple[str, int], str],
        replacements: Mapping[tuple[str, int], tuple[tuple[str, str], ...]],
        divergences: Mapping[tuple[str, int], str],
    ) -> None:
        self.report = report
        self.frames = frames
        self.sim = sim
        self.wire = wire
        self.ordered = ordered
        self.library = library
        self.directives = directives
        self.replacements = replacements
        self.divergences = divergences
        self.mapping: dict[str, str] = {}
        self.request_ids: dict[Any, Any] = {}
        self.orphaned: set[str] = set()
        self.seen_live: set[str] = set()
        self.queues: dict[str, deque[Recorded]] = defaultdict(deque)
        self.server_first: set[str] = set()
        self.since_last_send: set[str] = set()
        self.reproduced = True
        """Whether the simulator served the latest recorded request."""
        seen: set[str] = set()
        for frame in frames:
            found = ids_in(frame.message) - seen
            if frame.direction == "server":
                self.server_first |= found
                if "method" in frame.message:
                    self.queues[kind_key(frame.message)].append(frame)
            seen |= found

    # -- frames from the simulator ------------------------------------------------------
    def _map(self, live: Any, recorded: Any) -> None:
        if isinstance(live, str) and isinstance(recorded, str):
            if ID.fullmatch(recorded) and ID.fullmatch(live):
                self.mapping.setdefault(recorded, live)
        elif isinstance(live, dict) and isinstance(recorded, dict):
            if same_variant(live, recorded):
                for key in live.keys() & recorded.keys():
                    self._map(live[key], recorded[key])
        elif isinstance(live, list) and isinstance(recorded, list):
            for a, b in zip(live, recorded, strict=False):
                self._map(a, b)

    def _validate(self, frame: Frame, method: str | None) -> None:
        wire = self.wire
        try:
            if method is not None and "id" not in frame:
                spec = wire.CLIENT_NOTIFICATIONS.get(frame["method"])
                if spec is not None:
                    spec.params.model_validate(frame["params"], by_alias=True, by_name=False)
            elif method is not None:
                wire.CLIENT_REQUESTS[frame["method"]].params.model_validate(
                    frame["params"], by_alias=True, by_name=False
                )
            elif "error" in frame:
                wire.ErrorData.model_validate(frame["error"]["data"], by_alias=True, by_name=False)
        except (ValidationError, KeyError) as exc:
            self.report.failures.append(f"{kind_key(frame)} does not validate: {exc}")

    def observe(self, frame: Frame) -> None:
        """Check one simulator frame that is not the answer to a recorded request."""
        self.report.checked += 1
        self.since_last_send.add(str(frame.get("method")))
        self.seen_live |= ids_in(frame)
        key = kind_key(frame)
        self._validate(frame, frame.get("method"))
        expected_envelope = ["jsonrpc", "method", "params", "emittedAtMs"]
        if "id" in frame:
            expected_envelope = ["jsonrpc", "id", "method", "params"]
        if list(frame) != expected_envelope:
            self.report.failures.append(f"{key}: envelope {list(frame)}")
        queue = self.queues.get(key)
        recorded = queue.popleft() if queue else self.library.get(key)
        if recorded is None:
            self.report.unverified.add(key)
            return
        if queue is not None or key in self.queues:
            self._map(frame, recorded.message)
        if "id" in frame and "id" in recorded.message:
            self.request_ids[recorded.message["id"]] = frame["id"]
        compare(
            frame["params"],
            recorded.message.get("params", {}),
            ordered=self.ordered,
            where=key,
            failures=self.report.failures,
        )

    async def _read_until(self, done: Any, wait: float, *, answer_to: Any = None) -> Frame | None:
        """Observe frames until one satisfies ``done`` (returned observed) or, when
        ``answer_to`` is given, until the answer to that request (returned unobserved)."""
        with anyio.move_on_after(wait):
            while True:
                # The outer deadline bounds the whole wait; the simulator's own
                # per-line bound must not cut it shorter on a loaded machine.
                frame = await self.sim.next(wait)
                if answer_to is not None and "method" not in frame and frame.get("id") == answer_to:
                    return frame
                self.observe(frame)
                if done(frame):
                    return frame
        return None

    # -- frames from the recording ------------------------------------------------------
    def _rewrite(self, frame: Recorded, method: str, occurrence: int) -> str:
        text = frame.raw
        for recorded in sorted(self.mapping, key=len, reverse=True):
            text = text.replace(recorded, self.mapping[recorded])
        for old, new in self.replacements.get((method, occurrence), ()):
            text = text.replace(old, new)
        directive = self.directives.get((method, occurrence))
        if directive is None:
            return text
        message = json.loads(text)
        message["params"]["input"][-1]["text"] += "\n" + directive
        return json.dumps(message)

    def _answer_to(self, index: int, request_id: Any) -> Recorded | None:
        for frame in self.frames[index + 1 :]:
            if frame.direction == "client":
                continue
            if "method" not in frame.message and frame.message.get("id") == request_id:
                return frame
        return None

    def _segment_ids(self, index: int) -> set[str]:
        found: set[str] = set()
        for frame in self.frames[index + 1 :]:
            if frame.direction == "client":
                break
            found |= ids_in(frame.message) & self.server_first
        return found

    async def run(self) -> None:
        occurrences: dict[str, int] = defaultdict(int)
        for index, frame in enumerate(self.frames):
            if frame.direction != "client":
                continue
            message = frame.message
            method = message.get("method")
            if method is None:
                await self._reply(message)
                continue
            occurrence = occurrences[method]
            occurrences[method] += 1
            needed = ids_in(message) & self.server_first
            # An id the simulator has not orphaned is one it will send: wait for it, however
            # long a loaded machine makes that, rather than give up on the frame at a deadline.
            awaited = needed - self.mapping.keys() - self.orphaned
            if awaited:
                came = await self._read_until(
                    lambda _f, n=needed: not (n - self.mapping.keys() - self.orphaned), ANSWER_WAIT
                )
                if came is None:
                    self.report.failures.append(
                        f"{method} #{occurrence}: the simulator never sent {min(awaited)}"
                    )
                    return
            missing = needed - self.mapping.keys()
            if missing:
                self.report.skipped.append(f"{method} #{occurrence}: needs {sorted(missing)[0]}")
                self.orphaned |= self._segment_ids(index)
                continue
            self.since_last_send = set()
            self.reproduced = True
            await self.sim.send_raw(self._rewrite(frame, method, occurrence).encode())
            if "id" not in message:
                continue
            if not await self._answer(index, message, method, occurrence):
                return
        await self._finish()

    async def _reply(self, message: dict[str, Any]) -> None:
        live = self.request_ids.get(message.get("id"))
        if live is not None:
            await self.sim.send({**message, "id": live})

    async def _answer(
        self, index: int, message: dict[str, Any], method: str, occurrence: int
    ) -> bool:
        request_id = message["id"]
        answer = await self._read_until(lambda _f: False, ANSWER_WAIT, answer_to=request_id)
        if answer is None:
            self.report.failures.append(f"{method} #{occurrence}: no answer")
            return False
        self.report.checked += 1
        self._validate(answer, None)
        recorded = self._answer_to(index, request_id)
        if recorded is None:
            self.seen_live |= ids_in(answer)
            return True
        expected = recorded.message
        error = answer.get("error")
        kind = error.get("data", {}).get("kind") if error else None
        recorded_kind = (expected.get("error") or {}).get("data", {}).get("kind")
        if kind == "methodNotFound" and recorded_kind != "methodNotFound":
            self.report.unsupported.add(method)
            self.orphaned |= self._segment_ids(index)
            self.reproduced = False
            return True
        if (
            kind == "sessionNotFound"
            and "result" in expected
            and message.get("params", {}).get("sessionId") not in self.seen_live
        ):
            self.report.skipped.append(f"{method} #{occurrence}: the session predates the capture")
            return False
        self.seen_live |= ids_in(answer)
        if ("error" in answer) != ("error" in expected):
            reason = self.divergences.get((method, occurrence))
            if reason is None:
                self.report.failures.append(
                    f"{method} #{occurrence}: answered {list(answer)[-1]}, recorded "
                    f"{list(expected)[-1]}: {error or expected.get('error')}"
                )
            else:
                self.report.divergences.append(f"{method} #{occurrence}: {reason}")
            return True
        if list(answer) != list(expected) and not (
            set(answer) == set(expected) and not self.ordered
        ):
            self.report.failures.append(f"{method} #{occurrence}: envelope {list(answer)}")
        self._map(answer, expected)
        member = "result" if "result" in answer else "error"
        compare(
            answer[member],
            expected[member],
            ordered=self.ordered,
            where=f"{method} {member}",
            failures=self.report.failures,
        )
        return True

    async def _finish(self) -> None:
        """Check what the simulator still sends for the recording's last exchange."""
        tail: list[str] = []
        if not self.reproduced:
            self.frames = []
        for frame in reversed(self.frames):
            if frame.direction == "client":
                break
            method = frame.message.get("method")
            fresh = method not in self.since_last_send
            if method in SIMULATOR_EMITS and "id" not in frame.message and fresh:
                tail.append(method)
        for method in reversed(tail):
            if method in self.since_last_send:
                continue
            sent = await self._read_until(lambda f, m=method: f.get("method") == m, ANSWER_WAIT)
            if sent is None:
                self.report.failures.append(f"never sent {method} after the last exchange")
                return
        for line in await self.sim.rest_after_close():
            self.observe(json.loads(line))
