"""A long Muse session written straight into ``muse-sim``'s store: a day's work, event by event.

Contract: ``write_session(home, workspace, events)`` creates one stored session of ``workspace``
under the state directory ``home`` with exactly ``events`` durable view events (at least
``MIN_EVENTS``), as a host that had played its turns would have left it: ``meta.json`` with the
turn count and first prompt, ``events.jsonl`` with every event at its cursor and ``sourceRange``
(an item's events ranging from its first record), and the stored output of every ``bash`` call.
No host runs and nothing crosses a wire, so even 10,000 events take about a second.

The turns are a deterministic mix (``random.Random(seed)``) of what a working session records:
the user's prompt, a reasoning summary, tool calls (``bash`` with a few KiB of output, ``search``,
``edit_file`` with its diff, each behind a model step's token and context usage), sometimes a todo
list, the agent's answer, and the turn's end. Every event is validated with the model the wire
package has for its method before it is written, so the history is one real hosts could send.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from muse_acp.sim.model.outputs import TEXT_MEDIA_TYPE, OutputSink
from muse_acp.sim.serve.commands import DEFAULT_MODE
from muse_acp.sim.state.catalog import DEFAULT_MODEL
from muse_acp.sim.state.ids import (
    durable_cursor,
    new_call_id,
    new_uuid7,
    record_id,
    rfc3339_now,
)
from muse_acp.sim.state.store import EventLog, SessionMeta, Store
from muse_acp_wire import msp

__all__ = ["MIN_EVENTS", "write_session"]

MIN_EVENTS: Final = 6
"""The shortest turn: started, prompt, answer, one step's two usage events, completed."""
_PROSE: Final = (
    "the parser keeps every frame whole and checks its length before the body is read so a "
    "client that stops mid-line never leaves half a message behind while the relay goes on "
    "serving sessions whose hosts still answer their turns in order"
)
_WORDS: Final = tuple(_PROSE.split(" "))


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


@dataclass(slots=True)
class _Writer:
    """Appends one session's durable events, each at its next position (see ``LiveSession``)."""

    session_id: str
    log: EventLog
    store: Store
    head: int = 0
    first: dict[str, int] = field(default_factory=dict)
    """Where each item's first record is, for the ``sourceRange`` of its later events."""

    def event(self, method: str, params: dict[str, Any], item_id: str | None = None) -> None:
        sid, n = self.session_id, self.head + 1
        first = self.first.setdefault(item_id, n) if item_id is not None else n
        params = {
            "sessionId": sid,
            "viewCursor": durable_cursor(sid, n),
            "sourceRange": {
                "stream": {"kind": "session", "id": sid},
                "first": {"id": record_id(sid, first), "sequence": first},
                "last": {"id": record_id(sid, n), "sequence": n},
            },
            **params,
        }
        spec = msp.CLIENT_NOTIFICATIONS[method]
        assert spec.params is not None
        spec.params.model_validate(params, by_alias=True, by_name=False)  # raises if unreal
        line = {"method": method, "params": params}
        self.log.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode())
        self.head = n

    def item(self, method: str, item: dict[str, Any]) -> None:
        self.event(method, {"item": {"recordedAt": rfc3339_now(), **item}}, item["itemId"])


@dataclass(slots=True)
class _Turn:
    writer: _Writer
    rng: random.Random
    turn_id: str = field(default_factory=new_uuid7)
    tokens: int = 0
    steps: int = 0

    def item(self, method: str, kind: str, revision: int, status: str, **members: Any) -> None:
        common = {"kind": kind, "turnId": self.turn_id, "revision": revision, "status": status}
        self.writer.item(method, {**common, **members})

    def step(self, final: bool) -> None:
        """One model step's ``session/tokenUsage`` and ``session/contextUsage``."""
        self.steps += 1
        prompt, output = 1200 + 40 * self.steps, 20 + self.rng.randrange(400)
        self.tokens += prompt + output
        usage = {
            "turnId": self.turn_id,
            "modelId": DEFAULT_MODEL,
            "usage": {"inputTokens": prompt, "outputTokens": output, "reasoningTokens": 32},
            "promptTokens": prompt,
            "totalTokens": prompt + output,
            "durationMs": 400 + self.rng.randrange(4000),
            "cumulative": {
                "promptTokens": self.tokens - output,
                "outputTokens": output,
                "totalTokens": self.tokens,
            },
        }
        if not final:
            usage["finishReason"] = "tool_calls"
        self.writer.event("session/tokenUsage", usage)
        context = {"windowTokens": 1_000_000, "usedTokens": self.tokens, "pressure": "normal"}
        self.writer.event("session/contextUsage", context)

    def tool(self, tool: str) -> None:
        """A model step, then a tool call: 4 events (5 for ``edit_file``, approved first)."""
        self.step(final=False)
        item_id, call_id, rng = new_uuid7(), new_call_id(), self.rng
        args: dict[str, Any]
        done: dict[str, Any]
        if tool == "bash":
            command = f"pytest -q tests/test_{rng.choice(_WORDS)}.py"
            args = {"command": command, "description": "Run the tests"}
            lines = [
                f"tests/test_{rng.choice(_WORDS)}.py::{_text(rng, 3)} PASSED" for _ in range(60)
            ]
            output = ("\n".join(lines[: rng.randrange(10, 60)]) + "\n").encode()
            sink = OutputSink(
                self.writer.store, self.writer.session_id, item_id, media_type=TEXT_MEDIA_TYPE
            )
            sink.write(output)
            ref = sink.finish()
            done = {
                "visibleOutput": output.decode(),
                "outputRef": ref.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        elif tool == "search":
            pattern = rng.choice(_WORDS)
            args = {"glob": ["**/*.py"], "output_mode": "files_with_matches", "pattern": pattern}
            done = {"visibleOutput": "".join(f"src/{rng.choice(_WORDS)}.py\n" for _ in range(8))}
        else:
            old = [_text(rng, 8) for _ in range(6)]
            new = [*old[:2], _text(rng, 9), *old[3:]]
            args = {"find": "\n".join(old), "path": "src/relay.py", "replace": "\n".join(new)}
            done = {"visibleOutput": f"-{old[2]}\n+{new[2]}\n"}
        call = {"tool": tool, "callId": call_id, "args": json.dumps(args, separators=(",", ":"))}
        self.item("item/started", "toolCall", 1, "inProgress", itemId=item_id, **call)
        revision = 2
        if tool == "edit_file":
            self.item("item/updated", "toolCall", 2, "inProgress", itemId=item_id, **call)
            revision = 3
        self.item(
            "item/completed", "toolCall", revision, "completed", itemId=item_id, **call, **done
        )


def _turn_plan(rng: random.Random, size: int | None) -> tuple[list[str], bool, bool]:
    """The tools, reasoning and todo list of a turn; of exactly ``size`` events when given."""
    if size is None:
        tools = [
            rng.choice(("bash", "bash", "search", "edit_file")) for _ in range(rng.randrange(4))
        ]
        return tools, rng.random() < 0.8, rng.random() < 0.2
    spare = size - MIN_EVENTS
    tools, spare = ["search"] * (spare // 4), spare % 4
    return tools, spare >= 2, spare % 2 == 1


def _turn_size(tools: list[str], reasoning: bool, todo: bool) -> int:
    edits = tools.count("edit_file")
    return MIN_EVENTS + 4 * len(tools) + edits + 2 * reasoning + todo


def _play(writer: _Writer, rng: random.Random, plan: tuple[list[str], bool, bool]) -> str:
    tools, reasoning, todo = plan
    turn = _Turn(writer, rng)
    prompt = _text(rng, rng.randrange(8, 40))
    writer.event("turn/started", {"turnId": turn.turn_id, "commandId": new_uuid7()})
    user = {"itemId": new_uuid7(), "text": prompt, "commandId": new_uuid7()}
    turn.item("item/completed", "userMessage", 1, "completed", **user)
    if reasoning:
        item_id = new_uuid7()
        turn.item("item/started", "reasoning", 1, "inProgress", itemId=item_id, summary=[])
        summary = [_text(rng, rng.randrange(20, 60))]
        turn.item("item/completed", "reasoning", 2, "completed", itemId=item_id, summary=summary)
    if todo:
        entries = [
            {"text": _text(rng, 4), "status": status}
            for status in ("completed", "inProgress", "pending")
        ]
        writer.event("session/todoListChanged", {"items": entries})
    for tool in tools:
        turn.tool(tool)
    answer = _text(rng, rng.randrange(40, 160))
    turn.item("item/completed", "agentMessage", 2, "completed", itemId=new_uuid7(), text=answer)
    turn.step(final=True)
    ended = {"turnId": turn.turn_id, "terminal": "completed", "durationMs": 5000}
    writer.event("turn/completed", ended)
    return prompt


def write_session(home: Path, workspace: Path, events: int, *, seed: int = 35) -> tuple[str, int]:
    """Store a session of ``events`` durable events (see the module contract); its id and its
    number of turns."""
    if events < MIN_EVENTS:
        raise ValueError(f"a stored session needs at least {MIN_EVENTS} events")
    store = Store(home)
    stamp = rfc3339_now()
    meta = SessionMeta(
        session_id=new_uuid7(),
        created_at=stamp,
        updated_at=stamp,
        workspace_root=str(workspace),
        provider_id="meta",
        model_id=DEFAULT_MODEL,
        approval_mode=DEFAULT_MODE,
    )
    lease = store.create(meta)
    if lease is None:
        raise RuntimeError(f"could not take the lease of new session {meta.session_id}")
    log = store.log(meta.session_id)
    log.open_for_append()
    try:
        writer, rng = _Writer(meta.session_id, log, store), random.Random(seed)
        turns, first_prompt = 0, None
        while writer.head < events:
            left = events - writer.head
            plan = _turn_plan(rng, None)
            if _turn_size(*plan) > left or left - _turn_size(*plan) < MIN_EVENTS:
                plan = _turn_plan(rng, left)
            prompt = _play(writer, rng, plan)
            first_prompt = first_prompt or prompt
            turns += 1
        if writer.head != events:
            raise RuntimeError(f"wrote {writer.head} events instead of {events}")
        done = replace(
            meta, turn_count=turns, first_user_prompt=first_prompt, updated_at=rfc3339_now()
        )
        store.write_meta(done)
    finally:
        log.close()
        lease.release()
    return meta.session_id, turns
