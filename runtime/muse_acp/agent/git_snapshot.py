"""A bounded snapshot of a Git work tree for a review: what changed, read with ``git`` itself.

Contract: ``snapshot(cwd, target)`` runs ``git`` (never a shell) in ``cwd`` for the changes a
``ReviewTarget`` names and returns their text in sections headed ``### <what>``:

* ``uncommitted``: the branch and status (untracked files by name only), the staged diff and
  the unstaged diff;
* ``branch``: the commits on HEAD since its merge base with ``ref`` and the diff against that
  merge base (``ref...HEAD``);
* ``commit``: the commit ``ref`` with its message, stat and patch.

The section heads and Git output together are at most ``SNAPSHOT_LIMIT`` bytes (256 KiB): once
that is reached, the output being read is cut, no later section is read, and the text ends with
a line saying it was cut and what was left out. Every ``git`` runs through
``children.spawn_child``: stdout is read only up to what still fits, stderr is always drained,
each run has ``GIT_DEADLINE`` seconds, and the process is always reaped. Git never prompts and
never takes optional locks (a review must not disturb a concurrent ``git`` in the same tree);
output is uncoloured with raw paths.

Errors (``RpcError``, with ``data.failure`` as every failure carries): ``cwd`` is not inside a
Git work tree (-32602, kind ``notGitWorkTree``); ``ref`` is not usable (it starts with ``-``,
holds a control character or space) or names no commit (-32602, ``unknownGitRevision``); git is
missing, fails otherwise or runs past its deadline (-32603, ``gitFailed``, retryable when it
timed out). No text git wrote is quoted beyond a bounded, redacted stderr line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final, Literal

import anyio

from muse_acp.agent.failures import Failure
from muse_acp.children import spawn_child
from muse_acp.rpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from muse_acp.text import clip

__all__ = ["GIT_DEADLINE", "SNAPSHOT_LIMIT", "ReviewTarget", "snapshot"]

SNAPSHOT_LIMIT: Final = 256 * 1024
"""Most bytes of Git output a review snapshot carries."""
GIT_DEADLINE: Final = 20.0
"""Seconds one ``git`` run may take."""
_CHUNK: Final = 65536
_REF_LIMIT: Final = 200
_GIT: Final = ("git", "--no-pager", "-c", "color.ui=never", "-c", "core.quotepath=off")


@dataclass(frozen=True, slots=True)
class ReviewTarget:
    """What a review looks at."""

    scope: Literal["uncommitted", "branch", "commit"]
    ref: str | None = None
    """The base branch (``branch``) or the commit (``commit``)."""


def _error(kind: str, message: str, *, code: int = INVALID_PARAMS, retry: bool = False) -> RpcError:
    return Failure(
        kind, "adapter" if code == INTERNAL_ERROR else "client", retry, "preparing"
    ).error(message, code)


class _Output:
    """The snapshot text being assembled, within ``SNAPSHOT_LIMIT`` bytes."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.cut: str | None = None
        """What was being read when the limit was reached."""

    @property
    def room(self) -> int:
        return SNAPSHOT_LIMIT - self.size

    def add(self, data: bytes, what: str) -> bool:
        """Add ``data``, cut to the room left; False when it had to be cut (see ``cut``)."""
        kept = data[: self.room]
        self.parts.append(kept)
        self.size += len(kept)
        if len(kept) < len(data):
            self.cut = what
        return self.cut is None

    def text(self) -> str:
        text = b"".join(self.parts).decode("utf-8", "replace")
        if self.cut is not None:
            text += (
                f"\n[snapshot cut: it reached muse-acp's {SNAPSHOT_LIMIT // 1024} KiB limit while "
                f"reading {self.cut}; the rest of that and any later section were left out]\n"
            )
        return text


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", LC_ALL="C")
    return env


async def _git(cwd: str, args: tuple[str, ...], limit: int) -> tuple[int | None, bytes, str, bool]:
    """Run git; its exit status, stdout (at most ``limit`` bytes), last stderr line, and
    whether stdout was cut."""
    data = bytearray()
    cut = False
    try:
        with anyio.fail_after(GIT_DEADLINE):
            async with spawn_child(
                [*_GIT, *args], cwd=cwd, env=_environment(), tail_lines=4
            ) as git:
                try:
                    while len(data) <= limit:
                        data += await git.stdout.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                if len(data) > limit:
                    cut = True
                    del data[limit:]
                    # Closing our end makes git's next write fail, so it exits at once rather
                    # than waiting, blocked on a full pipe, to be terminated.
                    await git.stdout.aclose()
                else:
                    await git.exited.wait()
                await git.settle()
                lines = git.stderr_lines()
                status = git.returncode
    except TimeoutError:
        raise _error(
            "gitFailed",
            f"git {args[0]} did not finish within {GIT_DEADLINE:.0f} seconds; nothing was sent "
            "to Muse. Try again, or review a smaller change.",
            code=INTERNAL_ERROR,
            retry=True,
        ) from None
    except OSError as error:
        raise _error(
            "gitFailed",
            f"git could not be run ({error.strerror or error}); install Git and make sure it is "
            "on the PATH muse-acp runs with.",
            code=INTERNAL_ERROR,
        ) from None
    return status, bytes(data), clip(lines[-1], 300) if lines else "", cut


async def _check(cwd: str, target: ReviewTarget) -> None:
    status, out, _, _ = await _git(cwd, ("rev-parse", "--is-inside-work-tree"), 64)
    if status != 0 or out.strip() != b"true":
        raise _error(
            "notGitWorkTree",
            "The session's workspace is not inside a Git work tree, so there are no changes to "
            "review. Open a session in a Git repository (or run `git init` there) first.",
        )
    ref = target.ref
    if ref is None:
        return
    shown = clip(ref, _REF_LIMIT)
    usable = ref and not ref.startswith("-") and not any(c.isspace() or ord(c) < 32 for c in ref)
    status = None
    if usable:
        status, _, _, _ = await _git(
            cwd, ("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"), 256
        )
    if status != 0:
        raise _error(
            "unknownGitRevision",
            f"{shown!r} does not name a commit in this repository; give a branch, tag or commit "
            "(for example main, origin/main or HEAD~1).",
        )


def _plan(target: ReviewTarget) -> list[tuple[str, tuple[str, ...]]]:
    ref = target.ref or "HEAD"
    if target.scope == "branch":
        return [
            (
                f"commits on HEAD since {ref}",
                ("log", "--no-decorate", "--format=%h %s", f"{ref}..HEAD"),
            ),
            (
                f"diff of HEAD against its merge base with {ref}",
                ("diff", "--stat", "--patch", f"{ref}...HEAD"),
            ),
        ]
    if target.scope == "commit":
        return [(f"commit {ref}", ("show", "--format=fuller", "--stat", "--patch", ref))]
    return [
        ("branch and status", ("status", "--short", "--branch", "--untracked-files=normal")),
        ("staged changes", ("diff", "--cached", "--stat", "--patch")),
        ("unstaged changes", ("diff", "--stat", "--patch")),
    ]


async def snapshot(cwd: str, target: ReviewTarget) -> str:
    """The snapshot's text (see the module contract).

    Raises:
        RpcError: see the module contract.
    """
    await _check(cwd, target)
    output = _Output()
    for title, args in _plan(target):
        if not output.add(f"### {title} (git {' '.join(args)})\n".encode(), title):
            break
        status, data, error, cut = await _git(cwd, args, output.room)
        if status not in (0, None) and not cut:
            raise _error(
                "gitFailed",
                f"git {args[0]} failed ({error or f'exit status {status}'}); nothing was sent to "
                "Muse.",
                code=INTERNAL_ERROR,
            )
        ending = b"" if data.endswith(b"\n") else b"\n"
        added = output.add((data or b"(nothing)") + ending, title)
        if cut or not added:
            output.cut = title
            break
    return output.text()
