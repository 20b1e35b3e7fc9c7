"""A session's workspace that is not a usable folder is named as the cause: at ``session/new``
(a path that is a file), and at a prompt once the folder was removed or replaced after the
session began (not reported as a missing Muse executable)."""

from __future__ import annotations

import shutil
from pathlib import Path

import acp
import anyio
import pytest

from .harness import WAIT, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")


@pytest.mark.parametrize(
    ("replaced", "said"), [(False, "no longer exists"), (True, "is not a folder")]
)
@pytest.mark.parametrize("backend", [*VERSIONS, "exec"])
async def test_a_prompt_in_a_removed_workspace_names_the_workspace(
    tmp_path: Path, backend: str, replaced: bool, said: str
) -> None:
    world = make_world(tmp_path, version="1.2.1" if backend == "exec" else backend)
    if backend == "exec":
        world.extra_env["MUSE_ACP_BACKEND"] = "exec"
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shutil.rmtree(world.workspace)
        if replaced:
            world.workspace.write_text("a file where the folder was\n")
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "hello")
    message = str(raised.value)
    assert f"The session's workspace folder {world.workspace} {said}" in message
    assert "executable" not in message
    assert "MUSE_ACP_MUSE_BIN" not in message
    assert raised.value.code == -32002
    failure = failure_of(raised.value)
    assert (failure["kind"], failure["source"]) == ("workspaceUnavailable", "client")
    assert failure["execution"] == "notSubmitted"
    assert world.host_requests("turn/start") == []


async def test_a_new_session_in_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    path = tmp_path / "notes.txt"
    path.write_text("a file, not a folder\n")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.conn.new_session(cwd=str(path), mcp_servers=[])
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as missing:
            await agent.conn.new_session(cwd=str(tmp_path / "nowhere"), mcp_servers=[])
    assert raised.value.code == -32602
    assert f"{path} is not a folder" in str(raised.value)
    assert "does not exist" not in str(raised.value)
    assert "does not exist" in str(missing.value)
