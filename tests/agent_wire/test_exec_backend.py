"""The legacy exec backend over the wire: ``muse exec --json`` per prompt, with muse-sim as Muse.

Two ways in: a simulated Muse 0.2.1, which has ``exec`` but no ``serve`` (the backend is chosen
for it), and ``MUSE_ACP_BACKEND=exec`` on a 1.2.1 simulator that has both. Every frame the agent
writes is checked with the official ACP SDK's models, as in ``test_conformance``.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent
from .test_conformance import _check

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 8).decode()


@pytest.fixture
def legacy(tmp_path: Path) -> World:
    """A simulated Muse 0.2.1: ``exec --json`` and no ``serve``."""
    return make_world(tmp_path, version="0.2.1")


@pytest.fixture
def chosen(world: World) -> World:
    """A 1.2.1 simulator, with the exec backend chosen by the user."""
    world.extra_env["MUSE_ACP_BACKEND"] = "exec"
    return world


def exec_runs(world: World) -> list[dict[str, Any]]:
    """What each ``muse-sim exec`` run recorded about itself (flags, prompt, images, pid)."""
    if not world.capture.exists():
        return []
    lines = world.capture.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["exec"] for line in lines if line and "exec" in json.loads(line)]


def msp_requests(world: World) -> list[dict[str, Any]]:
    return [frame for frame in world.host_requests() if "method" in frame]


def initialize_meta(agent: Agent) -> dict[str, Any]:
    response = next(m for d, m in agent.frames if d == "in" and m.get("id") == 0)
    meta: dict[str, Any] = response["result"].get("_meta", {})
    return meta


def of_kind(agent: Agent, session: str, kind: str) -> list[Any]:
    return [u for s, u in agent.client.updates if s == session and u.session_update == kind]


async def test_a_host_without_serve_gets_the_exec_backend_and_says_why(legacy: World) -> None:
    async with running_agent(legacy) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            response = await agent.prompt(session, "hello from an old Muse")
    assert response.stop_reason == "end_turn"
    assert "You said: hello from an old Muse" in agent.client.text(session)
    backend = initialize_meta(agent)["muse/backend"]
    assert backend["backend"] == "exec"
    assert "0.2.1 has no `serve`" in backend["reason"]
    [run] = exec_runs(legacy)
    assert run["flags"] == ["--json"]
    assert run["prompt"] == "hello from an old Muse"
    assert msp_requests(legacy) == []
    assert _check(agent.frames) >= 3


async def test_exec_advertises_only_what_it_can_do(chosen: World) -> None:
    opted_in = schema.ClientCapabilities(
        field_meta={"muse/output": 1, "muse/steering": 1, "steering": {"supported": True}}
    )
    async with running_agent(chosen, capabilities=opted_in) as agent:
        init = next(m for d, m in agent.frames if d == "in" and m.get("id") == 0)["result"]
        capabilities = init["agentCapabilities"]
        assert capabilities.get("loadSession") is False
        assert set(capabilities["sessionCapabilities"]) == {"close"}
        assert initialize_meta(agent) == {
            "muse/backend": {
                "backend": "exec",
                "reason": "exec was chosen with --backend or MUSE_ACP_BACKEND",
            }
        }
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as one_folder:
                await agent.conn.new_session(
                    cwd=str(chosen.workspace),
                    mcp_servers=[],
                    additional_directories=[str(chosen.root)],
                )
            assert one_folder.value.code == -32602
            assert "exec backend runs `muse exec`, which works in one folder" in str(
                one_folder.value
            )
            for call in (
                agent.conn.list_sessions(cwd=str(chosen.workspace)),
                agent.conn.load_session(
                    session_id=session, cwd=str(chosen.workspace), mcp_servers=[]
                ),
                agent.conn.resume_session(
                    session_id=session, cwd=str(chosen.workspace), mcp_servers=[]
                ),
                agent.conn.fork_session(
                    session_id=session, cwd=str(chosen.workspace), mcp_servers=[]
                ),
            ):
                with pytest.raises(acp.RequestError) as refused:
                    await call
                assert refused.value.code == -32601
                assert "legacy exec backend" in str(refused.value)
            # No local commands: /models reaches Muse as prompt text.
            response = await agent.prompt(session, "/models")
        assert response.stop_reason == "end_turn"
        assert "You said: /models" in agent.client.text(session)
        assert "available_commands_update" not in agent.client.kinds(session)
    assert msp_requests(chosen) == []
    _check(agent.frames)


async def test_a_tool_turn_shows_generic_cards(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            response = await agent.prompt(session, "look around\nsim:bash 40\nsim:search needle")
    assert response.stop_reason == "end_turn"
    cards = of_kind(agent, session, "tool_call")
    assert [(c.title, c.kind, c.status) for c in cards] == [
        ("bash", "execute", "pending"),
        ("search", "search", "pending"),
    ]
    updates = of_kind(agent, session, "tool_call_update")
    assert [u.tool_call_id for u in updates] == [c.tool_call_id for c in cards]
    shell, search = updates
    assert shell.status == "completed"
    assert shell.title == "Run sim-output 40", "the result supplies the command's description"
    assert shell.raw_input == {"command": "sim-output 40"}
    assert shell.content[0].content.text.startswith("output-marker\n")
    assert search.status == "completed"
    assert search.title is None, "no search title is made up"
    assert search.locations is None
    assert search.raw_input is None
    assert "needle" in search.content[0].content.text
    assert all(c.type == "content" for u in updates for c in u.content or [])
    sent = [m["params"]["update"] for d, m in agent.frames if d == "in" and "params" in m]
    cards = [u for u in sent if u.get("sessionUpdate") in ("tool_call", "tool_call_update")]
    assert [(u["sessionUpdate"], u.get("name")) for u in cards] == [
        ("tool_call", "bash"),
        ("tool_call_update", "bash"),
        ("tool_call", "search"),
        ("tool_call_update", "search"),
    ]
    _check(agent.frames)


async def test_an_image_prompt_stages_private_files_and_removes_them(chosen: World) -> None:
    prompt: list[Any] = [
        acp.text_block("describe these"),
        acp.image_block(PNG, "image/png"),
        acp.text_block("and this"),
        acp.image_block(JPEG, "IMAGE/JPEG"),
    ]
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            response = await agent.conn.prompt(session_id=session, prompt=prompt)
    assert response.stop_reason == "end_turn"
    [run] = exec_runs(chosen)
    assert run["prompt"] == "describe these\n\nand this"
    images = run["images"]
    assert [Path(i["path"]).suffix for i in images] == [".png", ".jpg"]
    assert [i["bytes"] for i in images] == [len(base64.b64decode(PNG)), len(base64.b64decode(JPEG))]
    assert {i["mode"] for i in images} == {0o600}
    assert {i["dirMode"] for i in images} == {0o700}
    folder = Path(images[0]["path"]).parent
    assert not folder.exists(), "the staged images are removed after the turn"
    text = agent.client.text(session)
    assert "[image png" in text
    assert "[image jpg" in text


async def test_an_image_alone_is_refused_before_anything_runs(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as refused:
                await agent.conn.prompt(
                    session_id=session, prompt=[acp.image_block(PNG, "image/png")]
                )
    assert refused.value.code == -32602
    assert "needs some text" in str(refused.value)
    assert exec_runs(chosen) == []


async def test_cancel_stops_the_process_and_removes_the_images(legacy: World) -> None:
    prompt: list[Any] = [
        acp.text_block("sim:stream 1\nsim:hold"),
        acp.image_block(PNG, "image/png"),
    ]
    async with running_agent(legacy) as agent:
        session = await agent.new_session()
        results: list[str] = []

        async def run() -> None:
            response = await agent.conn.prompt(session_id=session, prompt=prompt)
            results.append(response.stop_reason)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await agent.client.wait_for(session, "agent_message_chunk")
                await agent.conn.cancel(session_id=session)
        assert results == ["cancelled"]
        [run_info] = exec_runs(legacy)
        with pytest.raises(ProcessLookupError):
            os.kill(run_info["pid"], 0)
        assert not Path(run_info["images"][0]["path"]).parent.exists()
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "next prompt")
        assert after.stop_reason == "end_turn"
        assert "You said: next prompt" in agent.client.text(session)
    _check(agent.frames)


async def test_closing_the_session_stops_its_run(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        session = await agent.new_session()
        results: list[str] = []

        async def run() -> None:
            results.append((await agent.prompt(session, "sim:bash 5\nsim:hold")).stop_reason)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await agent.client.wait_for(session, "tool_call_update")
                await agent.conn.close_session(session_id=session)
        assert results == ["cancelled"]
        [run_info] = exec_runs(chosen)
        with pytest.raises(ProcessLookupError):
            os.kill(run_info["pid"], 0)
    _check(agent.frames)


async def test_an_authentication_failure_says_how_to_sign_in(legacy: World) -> None:
    async with running_agent(legacy) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "sim:fail authRequired")
    error = raised.value
    assert error.code == -32000
    assert "muse login" in str(error)
    assert "META_API_KEY" in str(error)
    assert failure_of(error)["kind"] == "authRequired"
    assert failure_of(error)["source"] == "provider"
    _check(agent.frames)


async def test_a_step_limit_stops_the_turn_with_max_turn_requests(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            response = await agent.prompt(session, "work long\nsim:stream 3\nsim:fail stepLimit")
    assert response.stop_reason == "max_turn_requests"
    assert agent.client.text(session) == "t0 t1 t2 "
    _check(agent.frames)


async def test_another_failure_carries_the_hosts_reason(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "sim:fail modelError")
    assert raised.value.code == -32603
    assert "exit status 1" in str(raised.value)
    assert "the model failed (modelError)" in str(raised.value)
    assert failure_of(raised.value)["kind"] == "execFailed"


async def test_an_approval_fails_the_turn_with_advice_and_auto_approve_runs(chosen: World) -> None:
    async with running_agent(chosen) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "sim:approve make all")
            error = raised.value
            assert error.code == -32603
            assert "Auto-approve" in str(error)
            assert "Read-only" in str(error)
            assert failure_of(error)["kind"] == "approvalUnroutable"
            [card] = of_kind(agent, session, "tool_call")
            [closed] = of_kind(agent, session, "tool_call_update")
            assert closed.tool_call_id == card.tool_call_id
            assert closed.status == "failed"
            assert agent.client.permission_requests == []

            await agent.conn.set_session_mode(session_id=session, mode_id="autoApprove")
            response = await agent.prompt(session, "sim:approve make all")
    assert response.stop_reason == "end_turn"
    assert [run["flags"] for run in exec_runs(chosen)] == [
        ["--json"],
        ["--json", "--disable-approval"],
    ]
    assert of_kind(agent, session, "tool_call_update")[-1].title == "Run make all"
    _check(agent.frames)


async def test_read_only_mode_passes_its_flags(legacy: World) -> None:
    async with running_agent(legacy) as agent:
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
            response = await agent.prompt(session, "sim:bash 10")
    assert response.stop_reason == "end_turn"
    [run] = exec_runs(legacy)
    assert run["flags"] == ["--json", "--disable-write", "--disable-shell"]
    [update] = of_kind(agent, session, "tool_call_update")
    assert update.status == "failed"
    assert "rejected" in update.content[0].content.text


async def test_the_msp_backend_asked_for_never_falls_back_to_exec(legacy: World) -> None:
    legacy.extra_env["MUSE_ACP_BACKEND"] = "msp"
    async with running_agent(legacy) as agent:
        assert "muse/backend" not in initialize_meta(agent)
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "hello")
    assert "does not support `serve`" in str(raised.value)
    assert exec_runs(legacy) == []


def test_an_unknown_backend_value_stops_the_agent_at_start(world: World) -> None:
    env = world.env()
    env["MUSE_ACP_BACKEND"] = "telepathy"
    result = subprocess.run(
        [sys.executable, "-m", "muse_acp", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "MUSE_ACP_BACKEND must be auto, msp or exec" in result.stderr
    assert "'telepathy'" in result.stderr
