"""``authenticate`` over the wire: Muse is asked which credential it uses (MSP ``account/read``),
on every supported version, and what it says decides the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.sim.options.accounts import LOGIN_LABEL

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
KEY = "mk-wire-test-0123456789abcdef"


async def _authenticate(agent: Agent, method: str) -> dict[str, Any] | None:
    with anyio.fail_after(WAIT):
        response = await agent.conn.authenticate(method_id=method)
    return response.field_meta


async def _refused(agent: Agent, method: str) -> acp.RequestError:
    with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
        await agent.conn.authenticate(method_id=method)
    return raised.value


async def _muse_login(world: World) -> None:
    """What the user does in a terminal: ``muse login``."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([str(world.muse_bin), "login"], env=world.env())
    assert done.returncode == 0


def _opted_in(world: World) -> list[bool]:
    """For every host started, whether its connection opted in to experimental methods."""
    return [
        bool((frame["params"].get("capabilities") or {}).get("experimentalApi"))
        for frame in world.host_requests("initialize")
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_sign_in_is_checked_with_muse_before_and_after_muse_login(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version, signed_in=False)
    async with running_agent(world) as agent:
        # The method every client is offered.
        refused = await _refused(agent, "muse-account")
        assert refused.code == -32000
        assert "`muse login`" in str(refused)
        assert "META_API_KEY" in str(refused)
        failure = failure_of(refused)
        assert (failure["kind"], failure["phase"]) == ("authRequired", "authenticating")

        await _muse_login(world)
        meta = await _authenticate(agent, "muse-account")
        assert meta == {
            "muse/account": {
                "state": "accountLogin",
                "label": LOGIN_LABEL,
                "credentialRequired": True,
            }
        }
        # The exported key is checked first, without asking Muse.
        asked = len(world.host_requests("account/read"))
        no_key = await _refused(agent, "meta-api-key")
        assert no_key.code == -32000
        assert "META_API_KEY is not set" in str(no_key)
        assert len(world.host_requests("account/read")) == asked == 2
    assert _opted_in(world).count(True) == 2


@pytest.mark.parametrize("version", VERSIONS)
async def test_an_exported_key_is_the_credential_reported(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env["META_API_KEY"] = KEY
    async with running_agent(world) as agent:
        expected = {
            "muse/account": {
                "state": "envKey",
                "label": "META_API_KEY",
                "credentialRequired": True,
            }
        }
        assert await _authenticate(agent, "meta-api-key") == expected
        assert await _authenticate(agent, "muse-login") == expected
    frames = "\n".join(str(message) for _, message in agent.frames)
    assert KEY not in frames


async def test_the_key_method_says_what_muse_uses_when_the_key_does_not_reach_it(
    world: World,
) -> None:
    # A Muse that does not see the exported key, but has an account signed in.
    world.muse_bin.write_text(
        world.muse_bin.read_text().replace("exec ", "unset META_API_KEY\nexec ", 1)
    )
    world.extra_env["META_API_KEY"] = KEY
    await _muse_login(world)
    async with running_agent(world) as agent:
        refused = await _refused(agent, "meta-api-key")
        found = await _authenticate(agent, "muse-login")
    assert refused.code == -32000
    assert f"it uses a signed-in Muse account ({LOGIN_LABEL}), not the key" in str(refused)
    assert failure_of(refused)["kind"] == "credentialNotUsed"
    assert found is not None
    assert found["muse/account"]["state"] == "accountLogin"


async def test_only_the_account_check_opts_in_to_experimental_methods(world: World) -> None:
    await _muse_login(world)
    async with running_agent(world) as agent:
        await _authenticate(agent, "muse-login")
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    opted = _opted_in(world)
    assert opted.count(True) == 1
    assert len(opted) >= 2


@pytest.mark.parametrize(
    ("faults", "kind", "phase"),
    [
        ("exit-before-ack:account/read", "hostExited", "authenticating"),
        ("exit:handshake", "hostExited", "starting"),
    ],
)
async def test_a_host_that_fails_the_check_is_a_mapped_failure(
    world: World, faults: str, kind: str, phase: str
) -> None:
    world.extra_env["MUSE_SIM_FAULTS"] = faults
    async with running_agent(world) as agent:
        refused = await _refused(agent, "muse-login")
        failure = failure_of(refused)
        assert (failure["kind"], failure["phase"]) == (kind, phase)
        assert "Traceback" not in str(refused)
        # The agent goes on serving.
        assert (await _refused(agent, "muse-login")).code == refused.code


async def test_a_check_that_gets_no_answer_ends_at_the_read_deadline(world: World) -> None:
    world.extra_env.update(MUSE_SIM_FAULTS="hang-ack:account/read", MUSE_ACP_READ_TIMEOUT="1")
    async with running_agent(world) as agent:
        refused = await _refused(agent, "muse-login")
    failure = failure_of(refused)
    assert (failure["kind"], failure["phase"]) == ("deadlineExceeded", "authenticating")
