"""A session's workspace root: what a client's ``cwd`` must be, and when two paths are one.

Contract (pure, but for reading the file system): ``check_workspace`` accepts an absolute path
to an existing directory, and as many additional directories, each such a path, as
``MAX_ADDITIONAL``; it refuses anything else with INVALID_PARAMS (saying which path is missing or
is not a folder), quoting the client's path redacted and bounded. Whether Muse takes the
additional ones is decided elsewhere (``sessions.workspace_roots``). ``same_directory`` compares
two paths after resolving links.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from muse_acp.redact import redact
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp.text import clip

__all__ = ["MAX_ADDITIONAL", "QUOTED_PATH_LIMIT", "check_workspace", "same_directory"]

QUOTED_PATH_LIMIT: Final = 300
"""Longest part of a client's path quoted back in an error."""
MAX_ADDITIONAL: Final = 64
"""Most additional directories one session may name."""


def check_workspace(cwd: str, additional: Sequence[str] | None) -> str:
    """Validate a session's workspace root and its additional directories (see above)."""
    _check_folder(cwd, "cwd", "workspace")
    if additional and len(additional) > MAX_ADDITIONAL:
        raise RpcError(
            INVALID_PARAMS,
            f"a session can have at most {MAX_ADDITIONAL} additionalDirectories, got "
            f"{len(additional)}",
        )
    for path in additional or ():
        _check_folder(path, "each of additionalDirectories", "additional")
    return cwd


def _check_folder(path: str, member: str, role: str) -> None:
    # The path is the client's own, but quoted whole it could make an error of megabytes, and
    # it is redacted like host text: a client may have pasted a secret into it.
    quoted = redact(clip(path, QUOTED_PATH_LIMIT))
    if not os.path.isabs(path):
        raise RpcError(INVALID_PARAMS, f"{member} must be an absolute path, got {quoted!r}")
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise RpcError(
                INVALID_PARAMS,
                f"the {role} path {quoted} is not a folder; give the folder to work in",
            )
        raise RpcError(INVALID_PARAMS, f"the {role} directory {quoted} does not exist")


def same_directory(left: str | None, right: str) -> bool:
    return left is not None and os.path.realpath(left) == os.path.realpath(right)
