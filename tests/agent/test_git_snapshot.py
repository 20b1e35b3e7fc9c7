"""The review snapshot, read from a real temporary Git repository."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from muse_acp.agent.commands import git_snapshot
from muse_acp.agent.commands.git_snapshot import SNAPSHOT_LIMIT, ReviewTarget, snapshot
from muse_acp.rpc import RpcError

from .git_traps import make_traps

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


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        (ReviewTarget("uncommitted"), ["+staged", "+three", "## feature"]),
        (ReviewTarget("branch", "main"), ["Second version", "Signed version", "+two", "+signed"]),
        (ReviewTarget("commit", "HEAD"), ["Signed version", "-two", "+signed"]),
    ],
    ids=["uncommitted", "branch", "commit"],
)
async def test_a_review_runs_no_program_the_repository_or_git_config_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: ReviewTarget, shown: list[str]
) -> None:
    (tmp_path / "repo").mkdir()
    traps = make_traps(tmp_path / "repo", tmp_path)
    for name, value in traps.environment.items():
        monkeypatch.setenv(name, value)
    text = await snapshot(str(traps.repo), target)
    assert traps.fired() == []
    for change in shown:
        assert change in text, change


async def test_an_fsmonitor_that_never_answers_does_not_hold_a_review(
    repo: Path,
) -> None:
    git(repo, "config", "core.fsmonitor", "sleep 60")
    (repo / "a.txt").write_text("two\n")
    # A hang check: the review must not wait for the hook at all, let alone its deadline.
    with anyio.fail_after(10):
        text = await snapshot(str(repo), ReviewTarget("uncommitted"))
    assert "+two" in text


async def test_an_excludes_file_that_is_a_fifo_does_not_hold_a_review(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    fifo = tmp_path_factory.mktemp("excludes") / "fifo"
    os.mkfifo(fifo)
    git(repo, "config", "core.excludesFile", str(fifo))
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("noise\n")
    (repo / "new.txt").write_text("fresh\n")
    # Nothing ever writes the FIFO: reading it would block until the git deadline.
    with anyio.fail_after(10):
        text = await snapshot(str(repo), ReviewTarget("uncommitted"))
    assert "new.txt" in text
    assert "debug.log" not in text  # the repository's own .gitignore still counts


async def test_a_submodule_is_not_entered_with_its_own_configuration(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    inner, outer = tmp_path / "inner", tmp_path / "outer"
    inner.mkdir()
    outer.mkdir()
    git(inner, "init", "-q", "-b", "main")
    (inner / "s.txt").write_text("one\n")
    (inner / ".gitattributes").write_text("*.txt filter=inner\n")
    git(inner, "add", ".")
    git(inner, "commit", "-q", "-m", "inner")
    git(outer, "init", "-q", "-b", "main")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(outer, "commit", "-q", "-m", "with a submodule")
    (outer / "sub" / "s.txt").write_text("two\n")
    git(outer / "sub", "commit", "-q", "-am", "moved on")
    # The submodule's own config has a filter the outer repository does not define, and the
    # outer one asks for submodule diffs, which git makes by running git in the submodule.
    git(outer / "sub", "config", "filter.inner.clean", f"touch {marks}/inner-clean; cat")
    git(outer, "config", "diff.submodule", "diff")
    (outer / "sub" / "s.txt").write_text("three\n")
    text = await snapshot(str(outer), ReviewTarget("uncommitted"))
    assert list(marks.iterdir()) == []
    # The submodule is shown by the commit it now points at.
    assert "M sub" in text
    assert "Subproject commit" in text


async def test_a_partial_clone_fetches_nothing_for_a_review(tmp_path: Path) -> None:
    origin, clone, mark = tmp_path / "origin", tmp_path / "clone", tmp_path / "fetched"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    for text in ("one\n", "two\n"):
        (origin / "a.txt").write_text(text)
        git(origin, "add", "a.txt")
        git(origin, "commit", "-q", "-m", text.strip())
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", origin.as_uri(), "clone")
    # Fetching a missing object would run what the promisor remote's URL names.
    git(clone, "config", "remote.origin.url", f"ext::sh -c touch% {mark}")
    git(clone, "config", "protocol.ext.allow", "always")
    with pytest.raises(RpcError) as raised:
        await snapshot(str(clone), ReviewTarget("commit", "HEAD~1"))
    assert _kind(raised.value) == "gitFailed"
    assert not mark.exists()


@pytest.mark.parametrize("name", ["HEAD", "main"])
async def test_a_reference_that_is_also_a_file_name_is_reviewed(repo: Path, name: str) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second")
    (repo / name).write_text("a file named like the reference\n")
    commit = await snapshot(str(repo), ReviewTarget("commit", name))
    branch = await snapshot(str(repo), ReviewTarget("branch", "main"))
    assert ("second" if name == "HEAD" else "start") in commit
    assert "+two" in branch


async def test_a_repository_another_user_owns_is_reviewed_only_when_the_user_trusts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repo").mkdir()
    traps = make_traps(tmp_path / "repo", tmp_path)
    for name, value in traps.environment.items():
        monkeypatch.setenv(name, value)
    real = git_snapshot._environment

    def foreign(config: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
        # Git's own switch for treating a repository as another user's.
        return {**real(config), "GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}

    monkeypatch.setattr(git_snapshot, "_environment", foreign)
    with pytest.raises(RpcError) as raised:
        await snapshot(str(traps.repo), ReviewTarget("uncommitted"))
    assert raised.value.code == -32602
    assert _kind(raised.value) == "untrustedGitRepository"
    assert "safe.directory" in raised.value.message
    # The user's global configuration trusts it: that one setting is honoured, and still no
    # program of the repository's or of that configuration runs.
    with (Path(traps.environment["HOME"]) / ".gitconfig").open("a") as config:
        config.write(f"[safe]\n\tdirectory = {traps.repo}\n")
    text = await snapshot(str(traps.repo), ReviewTarget("uncommitted"))
    assert "+three" in text
    assert traps.fired() == []
