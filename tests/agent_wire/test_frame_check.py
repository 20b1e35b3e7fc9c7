"""The check every wire test ends with (``frame_check.check_recorded``, run by this package's
conftest) fails the test, naming the frame, when the agent writes one the ACP schemas refuse: a
tool call with a status ACP 1.25.0 does not have, or a plan operation (a kind only the SDK's
unstable schema has) with malformed entries. A real run's frames pass it unchanged, whether the
SDK's client or the raw one wrote them."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from tests.robust.rawagent import raw_agent

from .frame_check import check_recorded, frame_problems
from .harness import WAIT, World, running_agent

pytestmark = pytest.mark.anyio


async def test_a_tool_call_with_a_status_the_schema_refuses_fails_the_test_naming_it(
    world: World,
) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:bash 5000")
    assert frame_problems(agent.frames) == []
    index, message = next(
        (i, m)
        for i, (direction, m) in enumerate(agent.frames)
        if direction == "in"
        and m.get("params", {}).get("update", {}).get("sessionUpdate")
        in ("tool_call", "tool_call_update")
        and "status" in m["params"]["update"]
    )
    message["params"]["update"]["status"] = "stalled"  # as a buggy agent would have written it
    with pytest.raises(pytest.fail.Exception) as failed:
        check_recorded()  # what ends every wire test: this test's frames are checked no more
    problems = str(failed.value).splitlines()
    assert problems[0] == "the agent wrote frames that do not validate:"
    assert len(problems) == 3, problems  # muse-acp's models and the SDK's schema, each once
    named = f"frame {index} {json.dumps(message, sort_keys=True)[:200]}"
    assert all(problem.startswith(named) for problem in problems[1:]), problems
    sdk = [p for p in problems if "SDK 2.4.0 schema.json SessionNotification[tool_call" in p]
    assert len(sdk) == 1, problems
    assert "at update/status: 'stalled'" in sdk[0], problems


def _plan_update(plan: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    update = {"sessionUpdate": "plan_update", "plan": plan}
    params = {"sessionId": "s1", "update": update}
    return ("in", {"jsonrpc": "2.0", "method": "session/update", "params": params})


def test_a_plan_operation_is_checked_against_the_unstable_schema() -> None:
    good = {"type": "items", "planId": "p1", "entries": []}
    assert frame_problems([_plan_update(good)]) == []
    problems = frame_problems([_plan_update({**good, "entries": "all of it"})])
    sdk = [p for p in problems if "SDK 2.4.0 schema.unstable.json" in p]
    assert problems[0].startswith("frame 0 "), problems
    assert len(sdk) == 1, problems
    assert "at update/plan/entries: 'all of it'" in sdk[0], problems


async def test_a_raw_clients_frames_are_checked_too(world: World) -> None:
    """Tests that speak to the agent with the raw client (``tests.robust.rawagent``: withdrawn
    requests, watchdogs, fuzzed frames) have its frames checked the same way."""
    async with raw_agent(world) as agent:
        await agent.initialize()
        session = await agent.new_session()
    index, message = next(
        (i, m)
        for i, (direction, m) in enumerate(agent.frames)
        if direction == "in" and m.get("result", {}).get("sessionId") == session
    )
    message["result"]["sessionId"] = 7  # as a buggy agent would have answered
    with pytest.raises(pytest.fail.Exception) as failed:
        check_recorded()
    assert f"\nframe {index} " in str(failed.value), str(failed.value)
