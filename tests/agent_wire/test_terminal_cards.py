"""Shell output as a live terminal, for a client that declares the terminal convention
(``clientCapabilities._meta.terminal_output``, as Zed does), on every Muse version: the card
names its terminal, streams Muse's output deltas into it while the command runs, and closes it
with the exit; stored-output references work beside it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES
from muse_acp.agent.cards.terminal_cards import CAP_NOTE

from .harness import WAIT, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

ZED_LIKE: Final = {"_meta": {"terminal_output": True, "terminal-auth": True, "muse/output": 1}}
"""What Zed declares, with stored-output references asked for too."""
LONG_STREAM: Final = "1.4.4"
"""The version whose paced call runs the whole 3 s (the others run a fifth of it)."""


def _events(cards: list[dict[str, Any]], call_id: str) -> list[tuple[str, Any]]:
    """The terminal entries of one card's views, in order: ``(key, value)``."""
    return [
        (key, view["_meta"][key])
        for view in cards
        if view["toolCallId"] == call_id
        for key in ("terminal_info", "terminal_output", "terminal_exit")
        if key in (view.get("_meta") or {})
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_shell_call_streams_into_a_terminal_that_the_exit_closes(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    seconds = 3 if version == LONG_STREAM else 0.6
    async with running_agent(world, capabilities=ZED_LIKE) as agent:
        session = await agent.new_session()

        def outputs() -> list[dict[str, Any]]:
            views = agent.raw_updates(session, "tool_call", "tool_call_update")
            return [v for v in views if "terminal_output" in (v.get("_meta") or {})]

        answers: list[Any] = []
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                answers.append(await agent.prompt(session, f"sim:paced 4 {seconds}"))

            with anyio.fail_after(WAIT + seconds):
                tasks.start_soon(ask)
                await agent.client.wait_until(lambda: bool(outputs()))
                first_at = time.monotonic()
                # The first chunk is shown while the command still runs.
                assert answers == []
                assert not any("terminal_exit" in v["_meta"] for v in outputs())
        exited_at = time.monotonic()
        assert answers[0].stop_reason == "end_turn"
        if version == LONG_STREAM:
            assert exited_at - first_at > 2, "the chunks came as the output did, over 3 s"
        views = agent.raw_updates(session, "tool_call", "tool_call_update")
        call_id = views[0]["toolCallId"]
        events = _events(views, call_id)
        assert events[0] == ("terminal_info", {"terminal_id": call_id, "cwd": str(world.workspace)})
        assert [value["data"] for key, value in events[1:-1]] == [
            f"tick {n}/4\n" for n in range(1, 5)
        ]
        assert events[-1] == (
            "terminal_exit",
            {"terminal_id": call_id, "exit_code": None, "signal": None},
        )
        terminal = {"type": "terminal", "terminalId": call_id}
        opened, *_, closed = (v for v in views if v["toolCallId"] == call_id)
        assert (opened["sessionUpdate"], opened["content"]) == ("tool_call", [terminal])
        assert closed["status"] == "completed"
        assert closed["content"][0] == terminal
        texts = [c["content"]["text"] for c in closed["content"][1:]]
        assert not any("tick" in text for text in texts), "the output is not shown twice"
        if version == "1.2.1":  # the host with stored output: its reference stays on the card
            assert closed["_meta"]["muse/output"]["byteLen"] == 4 * len("tick 1/4\n")
            assert texts == [
                "[The full output (36 bytes) can be read through this card's muse/output "
                "reference.]"
            ]

        # Much output: the terminal gets the card's share of it and says where it stops.
        size = CARD_TEXT_LIMIT_BYTES + 5000
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(session, f"sim:bash {size}")).stop_reason == "end_turn"
        views = agent.raw_updates(session, "tool_call", "tool_call_update")
        big = views[-1]["toolCallId"]
        data = [value["data"] for key, value in _events(views, big) if key == "terminal_output"]
        assert data[-1].endswith(CAP_NOTE)
        assert len("".join(data).encode()) == CARD_TEXT_LIMIT_BYTES + len(CAP_NOTE.encode())
        closing = views[-1]
        assert "terminal_exit" in closing["_meta"]
        notes = closing["content"][1]["content"]["text"]
        assert f"first {CARD_TEXT_LIMIT_BYTES} of {size} bytes" in notes

        # Replayed by session/load, a card comes back as a terminal opened, then filled and
        # closed at once.
        before = len(agent.raw_updates(session, "tool_call", "tool_call_update"))
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = agent.raw_updates(session, "tool_call", "tool_call_update")[before:]
        kinds = [key for key, _ in _events(replayed, call_id)]
        assert kinds == ["terminal_info", "terminal_output", "terminal_exit"]
        assert _events(replayed, call_id)[1][1]["data"] == "".join(
            f"tick {n}/4\n" for n in range(1, 5)
        )
