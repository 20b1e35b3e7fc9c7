"""A session's workspace root: what a client's ``cwd`` must be, and when two paths are one.

Contract (pure, but for reading the file system): ``check_workspace`` accepts an absolute path
to an existing directory and no additional directories (Muse serves exactly one workspace root
per session), and refuses anything else with INVALID_PARAMS (saying whether the path is missing
or is not a folder), quoting the client's path redacted and bounded. ``same_directory``
compares two paths after resolving links.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from muse_acp.redact import redact
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp.text import clip

__all__ = ["QUOTED_PATH_LIMIT", "check_workspace", "same_directory"]

QUOTED_PATH_LIMIT: Final = 300
"""Longest part of a client's path quoted back in an error."""


def check_workspace(cwd: str, additional: Sequence[str] | None) -> str:
    """Validate a session's workspace root; Muse serves exactly one per session."""
    if additional:
        raise RpcError(
            INVALID_PARAMS,
            "Muse serves one workspace root per session; additionalDirectories are not "
            "supported, so start a separate session for each other directory",
            {"availability": "unsupported"},
        )
    # The path is the client's own, but quoted whole it could make an error of megabytes, and
    # it is redacted like host text: a client may have pasted a secret into it.
    quoted = redact(clip(cwd, QUOTED_PATH_LIMIT))
    if not os.path.isabs(cwd):
        raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path, got {quoted!r}")
    if not os.path.isdir(cwd):
        if os.path.exists(cwd):
            raise RpcError(
                INVALID_PARAMS,
                f"the workspace path {quoted} is not a folder; give the folder to work in",
            )
        raise RpcError(INVALID_PARAMS, f"the workspace directory {quoted} does not exist")
    return cwd


def same_directory(left: str | None, right: str) -> bool:
    return left is not None and os.path.realpath(left) == os.path.realpath(right)
