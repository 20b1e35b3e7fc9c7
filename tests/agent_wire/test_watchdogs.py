"""A turn never waits on what cannot come: a host request muse-acp cannot answer."""

from __future__ import annotations

from pathlib import Path

import acp
import anyio
import pytest

from .harness import WAIT, failure_of, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

STRAY = "tool/requestConsent"
"""A server request method no Muse version publishes and muse-acp does not handle."""


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_request_the_adapter_cannot_answer_fails_the_turn_at_once(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    # A silence budget far beyond the wait below: only the unanswerable request can end it.
    world.extra_env.update(MUSE_ACP_SILENCE_TIMEOUT="600", MUSE_SIM_FAULTS=f"stray-request:{STRAY}")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            started = anyio.current_time()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "please do the work")
            took = anyio.current_time() - started
    assert took < 10, "the turn fails as soon as the request arrives, not after a budget"
    failure = failure_of(raised.value)
    assert (failure["kind"], failure["source"], failure["retryable"], failure["phase"]) == (
        "hostRequestUnanswerable",
        "host",
        True,
        "running",
    )
    message = str(raised.value)
    assert STRAY in message
    assert "Send the prompt again" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_next_prompt_after_an_unanswerable_request_runs_on_a_new_host(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env.update(MUSE_SIM_FAULTS=f"stray-request:{STRAY}")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError):
                await agent.prompt(session, "first")
            # The fault is in every turn of the simulated host, so this fails again, cleanly.
            with pytest.raises(acp.RequestError) as again:
                await agent.prompt(session, "second")
    assert failure_of(again.value)["kind"] == "hostRequestUnanswerable"
