"""``/review``, ``/review-branch`` and ``/review-commit`` over the wire, with a real Git
repository in the workspace: the bounded snapshot Muse gets, the read-only host it runs on, and
the clear errors outside a work tree or for an unknown reference."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.agent.commands.git_snapshot import SNAPSHOT_LIMIT
from tests.agent.git_traps import make_traps

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Reviewer", "-c", "user.email=r@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout


def make_repo(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "app.py").write_text("def add(a, b):\n    return a + b\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-q", "-m", "First version")


def turn_text(world: World) -> str:
    """The text of the one turn Muse was asked to run."""
    starts = world.host_requests("turn/start")
    assert len(starts) == 1, starts
    parts: list[dict[str, Any]] = starts[0]["params"]["input"]
    assert len(parts) == 1
    text: str = parts[0]["text"]
    return text


async def _prompt(agent: Agent, session: str, text: str) -> str:
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == "end_turn"
    return agent.client.text(session)


@pytest.mark.parametrize("version", VERSIONS)
async def test_review_sends_the_uncommitted_changes_read_only(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    make_repo(world.workspace)
    (world.workspace / "app.py").write_text("def add(a, b):\n    return a - b  # oops\n")
    (world.workspace / "notes.txt").write_text("untracked\n")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shown = await _prompt(agent, session, "/review look at arithmetic")
    text = turn_text(world)
    assert "read-only review" in text
    assert "Focus especially on: look at arithmetic" in text
    assert "-    return a + b" in text
    assert "+    return a - b  # oops" in text
    assert "?? notes.txt" in text
    assert "snapshot cut" not in text
    assert "Reviewing the uncommitted changes" in shown
    assert "read-only" in shown


async def test_review_runs_on_a_host_without_writes_or_shell(tmp_path: Path) -> None:
    world = make_world(tmp_path, version="1.4.2")
    make_repo(world.workspace)
    # The simulated model obeys `sim:` lines; a commit message is shown indented by four
    # spaces, which still counts, so this one makes Muse state its host's flags.
    (world.workspace / "app.py").write_text("x = 1\n")
    git(world.workspace, "commit", "-q", "-am", "sim:flags")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shown = await _prompt(agent, session, "/review-commit")
        after = len(shown)
        later = (await _prompt(agent, session, "sim:flags"))[after:]
    flags = re.findall(r"\[host flags: ([^;\]]*)", shown)
    assert flags
    assert "--disable-write" in flags[0]
    assert "--disable-shell" in flags[0]
    # The next ordinary prompt runs with the session's own (Ask) mode again.
    again = re.findall(r"\[host flags: ([^;\]]*)", later)
    assert again
    assert "--disable-write" not in again[0]


@pytest.mark.parametrize("version", VERSIONS)
async def test_reviews_run_no_program_the_workspace_or_git_config_names(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    traps = make_traps(world.workspace, tmp_path / "traps")
    world.extra_env.update(traps.environment)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        for command in ("/review", "/review-branch main", "/review-commit HEAD"):
            await _prompt(agent, session, command)
    assert traps.fired() == []
    uncommitted, branch, commit = (
        start["params"]["input"][0]["text"] for start in world.host_requests("turn/start")
    )
    assert "+staged" in uncommitted
    assert "+three" in uncommitted
    assert "Second version" in branch
    assert "+two" in branch
    assert "Signed version" in commit
    assert "+signed" in commit


@pytest.mark.parametrize("version", VERSIONS)
async def test_review_of_a_huge_change_is_cut_and_says_so(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    make_repo(world.workspace)
    line = "value = 'the same long line of generated content, repeated many times'\n"
    (world.workspace / "app.py").write_text(line * ((SNAPSHOT_LIMIT * 2) // len(line)))
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shown = await _prompt(agent, session, "/review")
    text = turn_text(world)
    snapshot = text.split("BEGIN GIT SNAPSHOT", 1)[1]
    assert len(snapshot.encode()) <= SNAPSHOT_LIMIT + 1024
    assert "[snapshot cut:" in snapshot
    assert "256 KiB" in snapshot
    assert "was cut" in shown


@pytest.mark.parametrize("version", VERSIONS)
async def test_review_branch_and_commit(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    make_repo(world.workspace)
    git(world.workspace, "checkout", "-q", "-b", "feature")
    (world.workspace / "app.py").write_text("def add(a, b):\n    return b + a\n")
    git(world.workspace, "commit", "-q", "-am", "Swap the operands")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, "/review-branch main")
        branch = turn_text(world)
        await _prompt(agent, session, "/review-commit HEAD~1 naming")
    commit = world.host_requests("turn/start")[1]["params"]["input"][0]["text"]
    assert "Swap the operands" in branch
    assert "+    return b + a" in branch
    assert "First version" in commit
    assert "Focus especially on: naming" in commit
    assert "Swap the operands" not in commit


@pytest.mark.parametrize("version", VERSIONS)
async def test_review_outside_a_work_tree_is_a_clear_error(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "/review")
    assert raised.value.code == -32602
    assert "not inside a Git work tree" in str(raised.value)
    assert failure_of(raised.value)["kind"] == "notGitWorkTree"
    assert world.host_requests("turn/start") == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_review_of_an_unknown_reference_is_a_clear_error(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    make_repo(world.workspace)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        for command in ("/review-branch no-such-branch", "/review-commit --output=x"):
            with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, command)
            assert raised.value.code == -32602
            assert "does not name a commit" in str(raised.value)
            assert failure_of(raised.value)["kind"] == "unknownGitRevision"
    assert world.host_requests("turn/start") == []
