"""Replaying a long history keeps the translator's state bounded: ended items and their cards
are forgotten once ``ENDED_KEPT`` newer items have ended, and a later revision of an item still
kept only adds what is new."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any, Final

from muse_acp.agent.translation.translate import ENDED_KEPT, TurnTranslator
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

SESSION: Final = "sess-1"
ENVELOPE: Final = {"sessionId": "host-sess", "viewCursor": "v:host-sess:1"}
KIB: Final = 1024


def _event(method: str, item: dict[str, Any]) -> tuple[str, WireModel]:
    spec = msp.CLIENT_NOTIFICATIONS[method]
    assert spec.params is not None
    return method, spec.params.model_validate({**ENVELOPE, "item": item})


def _tool(n: int, revision: int, status: str) -> dict[str, Any]:
    return {
        "itemId": f"tool-{n}",
        "kind": "toolCall",
        "turnId": f"turn-{n // 4}",
        "revision": revision,
        "status": status,
        "tool": "bash",
        "callId": f"call-{n}",
        "args": '{"command": "make test", "description": "Run the tests"}',
        **({"visibleOutput": f"ok {n}\n" * 8} if status == "completed" else {}),
    }


def _history(items: int) -> Iterator[tuple[str, WireModel]]:
    """A durable history of ``items`` ended items: prompts, thoughts, tool calls, answers."""
    for n in range(items):
        base = {"turnId": f"turn-{n // 4}", "revision": 1, "status": "completed"}
        match n % 4:
            case 0:
                prompt = {"kind": "userMessage", "text": f"prompt {n}: fix the build"}
                yield _event("item/completed", {**base, "itemId": f"user-{n}", **prompt})
            case 1:
                thought = {"kind": "reasoning", "summary": [f"thinking about {n}", "and more"]}
                yield _event("item/completed", {**base, "itemId": f"rs-{n}", **thought})
            case 2:
                yield _event("item/started", _tool(n, 1, "inProgress"))
                yield _event("item/completed", _tool(n, 2, "completed"))
            case _:
                answer = {"kind": "agentMessage", "text": f"answer {n}: " + "done. " * 40}
                yield _event("item/completed", {**base, "itemId": f"msg-{n}", **answer})


def _retained_after_replay(items: int) -> int:
    """Bytes the replay's translator still holds after ``items`` ended items."""
    events = list(_history(items))
    translator = TurnTranslator(session_id=SESSION, replay=True, cwd="/work")
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for method, params in events:
            translator.updates(method, params)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()


def test_the_state_a_replay_keeps_does_not_grow_with_the_history() -> None:
    shorter = _retained_after_replay(2 * ENDED_KEPT)
    longer = _retained_after_replay(6 * ENDED_KEPT)
    # Before, every item's tracking and card stayed: a few hundred bytes each, over a MiB here.
    assert longer - shorter < 64 * KIB


def test_a_later_revision_of_an_ended_item_still_kept_updates_its_card() -> None:
    translator = TurnTranslator(session_id=SESSION, replay=True, cwd="/work")
    first = _tool(2, 2, "completed")
    for method, params in [_event("item/completed", first), *_history(ENDED_KEPT - 1)]:
        translator.updates(method, params)
    method, params = _event("item/updated", {**first, "revision": 3, "status": "failed"})
    [update] = translator.on_notification(method, params)
    assert isinstance(update, acp.ToolCallUpdateSessionUpdate)
    assert (update.tool_call_id, update.status) == ("call-2", "failed")
