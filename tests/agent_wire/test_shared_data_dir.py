"""Two muse-acp processes on one data directory, as an editor and a command-line client (acpx)
on the same session: neither loses what the other stored, and neither writes back a stale
value of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from .harness import WAIT, Agent, World, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
ROUNDS = 50
MODES = ("plan", "readOnly")
EFFORTS = ("low", "high")


def _current(options: list[Any] | None, option_id: str) -> str:
    assert options is not None
    option = next(o for o in options if getattr(o, "root", o).id == option_id)
    return str(getattr(option, "root", option).current_value)


def _stored(world: World, session: str) -> dict[str, Any]:
    path = world.data_dir / "sessions" / f"{session}.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


async def _load(agent: Agent, session: str) -> Any:
    with anyio.fail_after(WAIT):
        return await agent.conn.load_session(
            session_id=session, cwd=str(agent.world.workspace), mcp_servers=[]
        )


async def _set_effort(agent: Agent, session: str, effort: str) -> list[Any]:
    answer = await agent.conn.set_config_option(
        session_id=session, config_id="reasoningEffort", value=effort
    )
    return list(answer.config_options)


async def test_concurrent_changes_from_two_processes_are_all_kept(world: World) -> None:
    # The store never asks Muse anything: one host version is enough here (the load is tested
    # on every version below).
    async with running_agent(world) as first, running_agent(world) as second:
        session = await first.new_session()
        await _load(second, session)
        seen: list[tuple[str, str, str]] = []

        async def rename_and_set_effort(index: int) -> None:
            await first.prompt(session, f"/rename Round {index}")
            await _set_effort(first, session, EFFORTS[index % 2])

        async def set_mode(index: int) -> None:
            await second.conn.set_session_mode(session_id=session, mode_id=MODES[index % 2])

        for index in range(ROUNDS):
            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as group:
                    group.start_soon(rename_and_set_effort, index)
                    group.start_soon(set_mode, index)
            stored = _stored(world, session)
            settings = stored["settings"]
            seen.append((stored["userTitle"]["text"], settings["modeId"], settings["effort"]))
        # The first process learns the mode the second one stored when it stores again.
        with anyio.fail_after(WAIT):
            options = await _set_effort(first, session, "max")
    expected = [(f"Round {i}", MODES[i % 2], EFFORTS[i % 2]) for i in range(ROUNDS)]
    lost = [
        (i, got) for i, (got, want) in enumerate(zip(seen, expected, strict=True)) if got != want
    ]
    assert lost == [], f"{len(lost)} of {ROUNDS} rounds lost a change, e.g. {lost[:3]}"
    assert _current(options, "mode") == MODES[(ROUNDS - 1) % 2]
    async with running_agent(world) as third:
        loaded = await _load(third, session)
    assert loaded.modes.current_mode_id == MODES[(ROUNDS - 1) % 2]
    assert _current(loaded.config_options, "reasoningEffort") == "max"
    assert _stored(world, session)["userTitle"]["text"] == f"Round {ROUNDS - 1}"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_process_that_loaded_earlier_does_not_undo_plan_mode(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world) as earlier, running_agent(world) as other:
        session = await earlier.new_session()
        with anyio.fail_after(WAIT):
            await earlier.prompt(session, "hello")
        await _load(earlier, session)
        await _load(other, session)
        with anyio.fail_after(WAIT):
            await other.conn.set_session_mode(session_id=session, mode_id="plan")
            options = await _set_effort(earlier, session, "high")
        assert _stored(world, session)["settings"]["modeId"] == "plan"
        assert _current(options, "mode") == "plan"
        reloaded = await _load(earlier, session)
        assert reloaded.modes.current_mode_id == "plan"
        # A session still live in the earlier process is read afresh when it is resumed.
        with anyio.fail_after(WAIT):
            await other.conn.set_session_mode(session_id=session, mode_id="readOnly")
            resumed = await earlier.conn.resume_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        assert resumed.modes is not None
        assert resumed.modes.current_mode_id == "readOnly"
    async with running_agent(world) as fresh:
        loaded = await _load(fresh, session)
    assert loaded.modes.current_mode_id == "readOnly"
    assert _current(loaded.config_options, "reasoningEffort") == "high"
