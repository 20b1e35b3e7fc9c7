"""Random prompt content through the agent: every prompt runs a turn or is refused before one.

One ``muse-acp serve`` and one session serve the whole module. A prompt of acceptable blocks must
end its turn normally; any other prompt must be refused INVALID_PARAMS, naming one of its bad
blocks, without a turn reaching Muse. Steering requests carrying the same content are checked
the same way (with no turn running, acceptable content is refused INVALID_REQUEST instead).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from hypothesis import given, strategies as st

from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST

from .checks import problems_in
from .content import Block, blocks, prompt_is_acceptable
from .frames import dumps
from .profiles import fuzz_settings
from .rawagent import RawAgent, id_key

pytestmark = pytest.mark.anyio

_BLOCK_NAMED = re.compile(r"prompt block (\d+) |prompt\[(\d+)\]")


@pytest.fixture(scope="module")
async def session_id(agent: RawAgent) -> str:
    return await agent.new_session()


def turns_started(agent: RawAgent, method: str = "turn/start") -> int:
    """How many ``method`` requests reached a host (the capture is split on LF alone, since
    prompt text may hold other line separators)."""
    capture = agent.world.capture
    lines = capture.read_bytes().split(b"\n") if capture.exists() else []
    return sum(1 for line in lines if line and json.loads(line).get("method") == method)


async def send_content(
    agent: RawAgent, method: str, params: dict[str, Any], prompt: list[Any]
) -> dict[str, Any]:
    """Send ``method`` with ``prompt`` spliced in as raw JSON (so raw number tokens survive)."""
    request_id = agent.next_id()
    head = dumps({"jsonrpc": "2.0", "id": request_id, "method": method})
    body = dumps(params)[:-1] + ("," if params else "") + '"prompt":' + dumps(prompt) + "}"
    await agent.write(f'{head[:-1]},"params":{body}}}\n'.encode())
    await agent.wait_until(lambda: id_key(request_id) in agent.responses, f"{method} answer")
    return agent.responses[id_key(request_id)][0]


def named_block(message: str) -> int | None:
    """The 0-based index of the block an INVALID_PARAMS message names, if it names one."""
    found = _BLOCK_NAMED.search(message)
    if found is None:
        return None
    return int(found.group(1)) - 1 if found.group(1) else int(found.group(2))


def check_refusal(response: dict[str, Any], prompt: list[Block]) -> None:
    error = response.get("error")
    assert isinstance(error, dict), f"expected a refusal, got {response}"
    assert error["code"] == INVALID_PARAMS, error
    index = named_block(error["message"])
    if index is None:
        assert all(block.acceptable for block in prompt), error
    else:
        assert not prompt[index].acceptable, (error, prompt[index])


@fuzz_settings(quick=120)
@given(st.lists(blocks, max_size=6))
async def test_a_prompt_either_ends_its_turn_or_is_refused_before_one_starts(
    agent: RawAgent, session_id: str, prompt: list[Block]
) -> None:
    first_line, turns = len(agent.lines), turns_started(agent)
    response = await send_content(
        agent, "session/prompt", {"sessionId": session_id}, [b.json for b in prompt]
    )
    if prompt_is_acceptable(prompt):
        assert response.get("result") == {"stopReason": "end_turn"}, response
        assert turns_started(agent) == turns + 1
    else:
        check_refusal(response, prompt)
        assert turns_started(agent) == turns
    assert problems_in(agent.lines[first_line:]) == []


@fuzz_settings(quick=40)
@given(
    st.lists(blocks, min_size=1, max_size=4), st.sampled_from(("_muse/steer", "_session/steering"))
)
async def test_steering_content_is_checked_like_a_prompt_and_never_starts_a_turn(
    agent: RawAgent, session_id: str, prompt: list[Block], method: str
) -> None:
    turns, steers = turns_started(agent), turns_started(agent, "turn/steer")
    params: dict[str, Any] = {"sessionId": session_id}
    if method == "_muse/steer":
        params["expectedTurnId"] = "no-such-turn"
    response = await send_content(agent, method, params, [b.json for b in prompt])
    if prompt_is_acceptable(prompt):
        assert response.get("error", {}).get("code") == INVALID_REQUEST, response
    else:
        check_refusal(response, prompt)
    assert (turns_started(agent), turns_started(agent, "turn/steer")) == (turns, steers)


HUGE_TEXT = "huge ✓ " * (512 * 1024)
ODD_TEXT = '\x00nul \u202eright-to-left\u202c e\u0301 \ufeff bom \U0001f600 \r\n\ttabs \\ "quotes"'


@pytest.mark.parametrize(
    "text", [pytest.param(HUGE_TEXT, id="3.5-MiB"), pytest.param(ODD_TEXT, id="odd")]
)
async def test_huge_and_odd_text_is_carried_to_muse_and_back_intact(
    agent: RawAgent, session_id: str, text: str
) -> None:
    first_notification = len(agent.notifications)
    response = await agent.prompt_text(session_id, text)
    assert response.get("result") == {"stopReason": "end_turn"}, response
    echoed = "".join(
        n["params"]["update"]["content"]["text"]
        for n in agent.notifications[first_notification:]
        if n["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )
    assert text.strip("\n") in echoed


async def test_images_beyond_the_prompt_limit_are_refused_from_their_length(
    agent: RawAgent, session_id: str
) -> None:
    data = base64.b64encode(bytes(6 * 1024 * 1024 + 1)).decode()
    turns = turns_started(agent)
    prompt = [{"type": "image", "data": data, "mimeType": "image/png"}]
    response = await send_content(agent, "session/prompt", {"sessionId": session_id}, prompt)
    assert response.get("error", {}).get("code") == INVALID_PARAMS
    assert turns_started(agent) == turns


async def test_after_all_that_content_the_session_still_runs_a_turn(
    agent: RawAgent, session_id: str
) -> None:
    response = await agent.prompt_text(session_id, "one more")
    assert response.get("result") == {"stopReason": "end_turn"}
