"""The review snapshot, read from a real temporary Git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from muse_acp.agent import git_snapshot
from muse_acp.agent.git_snapshot import SNAPSHOT_LIMIT, ReviewTarget, snapshot
from muse_acp.rpc import RpcError

pytestmark = pytest.mark.anyio


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=30,
    )


def _kind(error: RpcError) -> object:
    data = error.data
    assert isinstance(data, dict)
    failure = data["failure"]
    assert isinstance(failure, dict)
    return failure["kind"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "start")
    return tmp_path


async def test_uncommitted_changes_have_status_staged_and_unstaged_sections(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("three\n")
    text = await snapshot(str(repo), ReviewTarget("uncommitted"))
    staged = text.index("### staged changes")
    unstaged = text.index("### unstaged changes")
    assert text.startswith("### branch and status")
    assert "## main" in text
    assert "+two" in text[staged:unstaged]
    assert "+three" in text[unstaged:]
    assert "snapshot cut" not in text


async def test_a_clean_tree_says_there_is_nothing(repo: Path) -> None:
    text = await snapshot(str(repo), ReviewTarget("uncommitted"))
    assert text.count("(nothing)") == 2


async def test_output_past_the_limit_is_cut_and_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_snapshot, "SNAPSHOT_LIMIT", 4096)
    (repo / "a.txt").write_text("changed line of text\n" * 2000)
    text = await snapshot(str(repo), ReviewTarget("uncommitted"))
    body, note = text.split("\n[snapshot cut:", 1)
    assert len(body.encode()) <= 4096
    assert "4 KiB limit while reading unstaged changes" in note
    assert SNAPSHOT_LIMIT == 256 * 1024


async def test_outside_a_work_tree_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RpcError) as raised:
        await snapshot(str(tmp_path), ReviewTarget("uncommitted"))
    assert raised.value.code == -32602
    assert _kind(raised.value) == "notGitWorkTree"


@pytest.mark.parametrize("ref", ["nope", "-p", "main --all", "ma\x01in", ""])
async def test_unusable_references_are_refused(repo: Path, ref: str) -> None:
    with pytest.raises(RpcError) as raised:
        await snapshot(str(repo), ReviewTarget("commit", ref))
    assert raised.value.code == -32602
    assert _kind(raised.value) == "unknownGitRevision"
