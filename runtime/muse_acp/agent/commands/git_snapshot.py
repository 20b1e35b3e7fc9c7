"""A bounded snapshot of a Git work tree for a review: what changed, read with ``git`` itself.

Contract: ``snapshot(cwd, target)`` runs ``git`` (never a shell) in ``cwd`` for the changes a
``ReviewTarget`` names and returns their text in sections headed ``### <what>``, at most
``SNAPSHOT_LIMIT`` bytes in all (cut text says so). Every run goes through
``children.spawn_child`` within ``GIT_DEADLINE`` seconds and is reaped. The repository is not
trusted: ``_environment`` keeps git from running any program it names (hooks, filters, diff
drivers, pagers, credential helpers, fsmonitor) or fetching, and ignores inherited ``GIT_*``
variables and system and global configuration but ``safe.directory``.

Errors (``RpcError``): not a Git work tree (-32602 ``notGitWorkTree``), an untrusted
repository (-32602 ``untrustedGitRepository``), an unusable or unknown ``ref`` (-32602
``unknownGitRevision``), git missing, failing or timing out (-32603 ``gitFailed``). Git's own
text is quoted only as a bounded, redacted stderr line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

import anyio

from muse_acp.agent.errors.failures import Failure
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
_GIT: Final = ("git", "--no-pager")
_CONFIG_LIMIT: Final = 65536
"""Most bytes of filter driver names read from the repository's configuration."""
_SAFE_CONFIG: Final = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.untrackedCache", "keep"),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    ("core.quotepath", "off"),
    ("color.ui", "never"),
    ("diff.external", ""),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("log.showSignature", "false"),
    ("credential.helper", ""),
)
"""Configuration that wins over the repository's (an empty value unsets a program)."""
_FILTER_KEYS: Final = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
_DIFF_FLAGS: Final = ("--no-ext-diff", "--no-textconv", "--submodule=short")
_SAFE_FLAGS: Final = MappingProxyType(
    {
        "status": ("--ignore-submodules=dirty",),
        "diff": (*_DIFF_FLAGS, "--ignore-submodules=dirty"),
        "show": ("--no-show-signature", *_DIFF_FLAGS),
        "log": ("--no-show-signature",),
    }
)
"""Flags each command runs with, whatever the configuration says (shown in no heading)."""


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


def _environment(config: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The environment of every git run: nothing ``GIT_*`` inherited (``GIT_DIR``,
    ``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_PARAMETERS``...), no system or global configuration,
    and ``_SAFE_CONFIG`` then ``config`` as command-line configuration (``GIT_CONFIG_COUNT``:
    a filter driver's name may hold ``=``)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_LAZY_FETCH="1",
        # No transport is allowed: no protocol name starts with "-". Git before 2.44 ignores
        # GIT_NO_LAZY_FETCH, and a partial clone's fetch may run what its remote names.
        GIT_ALLOW_PROTOCOL="-",
        GIT_PAGER="cat",
        LC_ALL="C",
    )
    for index, (key, value) in enumerate(config := [*_SAFE_CONFIG, *config]):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_CONFIG_COUNT"] = str(len(config))
    return env


async def _git(
    cwd: str, args: tuple[str, ...], limit: int, env: dict[str, str]
) -> tuple[int | None, bytes, tuple[str, ...], bool]:
    """Run git with ``env`` (see ``_environment``); its exit status, stdout (at most ``limit``
    bytes), last stderr lines, and whether stdout was cut."""
    data = bytearray()
    cut = False
    command = [*_GIT, args[0], *_SAFE_FLAGS.get(args[0], ()), *args[1:]]
    try:
        with anyio.fail_after(GIT_DEADLINE):
            async with spawn_child(command, cwd=cwd, env=env, tail_lines=4) as git:
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
    return status, bytes(data), lines, cut


def _said(lines: tuple[str, ...]) -> str:
    """What git said last on stderr, bounded."""
    return clip(lines[-1], 300) if lines else ""


async def _check(cwd: str) -> dict[str, str]:
    """Refuse a ``cwd`` outside a work tree; the environment for the rest of the snapshot."""
    trusted = [("safe.directory", folder) for folder in await _trusted(cwd)]
    args = ("rev-parse", "--is-inside-work-tree")
    status, out, said, _ = await _git(cwd, args, 64, _environment(trusted))
    if status != 0 and any("safe.directory" in line for line in said):
        raise _error(
            "untrustedGitRepository",
            "Git does not trust the repository of the session's workspace: another user owns "
            "it. If you trust it, add it to your Git configuration's safe.directory list (`git "
            "config --global --add safe.directory <folder>`), then review again.",
        )
    if status != 0 or out.strip() != b"true":
        raise _error(
            "notGitWorkTree",
            "The session's workspace is not inside a Git work tree, so there are no changes to "
            "review. Open a session in a Git repository (or run `git init` there) first.",
        )
    filters = await _filters(cwd, _environment(trusted))
    return _environment(
        [*trusted, *((f"filter.{n}.{key}", v) for n in filters for key, v in _FILTER_KEYS)]
    )


async def _trusted(cwd: str) -> list[str]:
    """The folders the user's own system and global configuration trust though another user
    owns them (``safe.directory``, in order): the user's decision, so it is kept, and nothing
    else of that configuration is read (nothing of a scope that cannot be read)."""
    env = _environment()
    for key in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"):
        env.pop(key)
        if key in os.environ:  # where the user keeps that configuration
            env[key] = os.environ[key]
    scopes = ["--global"]
    if os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        scopes.insert(0, "--system")
    found: list[str] = []
    for scope in scopes:
        args = ("config", scope, "--includes", "--null", "--get-all", "safe.directory")
        status, out, _, cut = await _git(cwd, args, _CONFIG_LIMIT, env)
        if status == 0 and not cut:
            found += out.decode("utf-8", "surrogateescape").split("\0")[:-1]
    return found


async def _filters(cwd: str, env: dict[str, str]) -> tuple[str, ...]:
    """The name of every filter driver the repository's configuration (includes too) defines.

    Reading configuration runs nothing; git exits 1 when it defines none."""
    args = ("config", "--null", "--name-only", "--get-regexp", r"^filter\.")
    status, out, said, cut = await _git(cwd, args, _CONFIG_LIMIT, env)
    if cut or status not in (0, 1):
        raise _error(
            "gitFailed",
            "the repository's configuration could not be read whole "
            f"({_said(said) or 'it defines too many filter drivers'}); nothing was sent to Muse.",
            code=INTERNAL_ERROR,
        )
    names: dict[str, None] = {}
    for variable in out.decode("utf-8", "surrogateescape").split("\0"):
        name, dot, _ = variable.removeprefix("filter.").rpartition(".")
        if variable.startswith("filter.") and dot:
            names[name] = None
    return tuple(names)


async def _check_ref(cwd: str, ref: str, env: dict[str, str]) -> None:
    shown = clip(ref, _REF_LIMIT)
    usable = ref and not ref.startswith("-") and not any(c.isspace() or ord(c) < 32 for c in ref)
    status = None
    if usable:
        args = ("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        status, _, _, _ = await _git(cwd, args, 256, env)
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
                ("log", "--no-decorate", "--format=%h %s", f"{ref}..HEAD", "--"),
            ),
            (
                f"diff of HEAD against its merge base with {ref}",
                ("diff", "--stat", "--patch", f"{ref}...HEAD", "--"),
            ),
        ]
    if target.scope == "commit":
        return [(f"commit {ref}", ("show", "--format=fuller", "--stat", "--patch", ref, "--"))]
    return [
        ("branch and status", ("status", "--short", "--branch", "--untracked-files=normal")),
        ("staged changes", ("diff", "--cached", "--stat", "--patch", "--")),
        ("unstaged changes", ("diff", "--stat", "--patch", "--")),
    ]


async def snapshot(cwd: str, target: ReviewTarget) -> str:
    """The snapshot's text (see the module contract).

    Raises:
        RpcError: see the module contract.
    """
    env = await _check(cwd)
    if target.ref is not None:
        await _check_ref(cwd, target.ref, env)
    output = _Output()
    for title, args in _plan(target):
        if not output.add(f"### {title} (git {' '.join(args)})\n".encode(), title):
            break
        status, data, said, cut = await _git(cwd, args, output.room, env)
        if status not in (0, None) and not cut:
            raise _error(
                "gitFailed",
                f"git {args[0]} failed ({_said(said) or f'exit status {status}'}); nothing was "
                "sent to Muse.",
                code=INTERNAL_ERROR,
            )
        ending = b"" if data.endswith(b"\n") else b"\n"
        added = output.add((data or b"(nothing)") + ending, title)
        if cut or not added:
            output.cut = title
            break
    return output.text()
