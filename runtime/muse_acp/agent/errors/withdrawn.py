"""Requests refused up front because the installed Muse is known to lack or break what they need
(``HostFeatures.withdrawn``, from ``host.versions.KNOWN_BEHAVIOURS``, or a feature its version
does not declare).

Contract: each error is a host failure (``data.failure.source`` ``host``, not retryable) raised
before anything reaches Muse, so nothing changed; its message says what the user can do instead.
"""

from __future__ import annotations

from muse_acp.agent.errors.failures import Failure
from muse_acp.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from muse_acp.text import clip

__all__ = [
    "delete_not_served",
    "delete_unavailable",
    "fork_boundary_broken",
    "workspace_roots_unavailable",
]


def _muse(version: str | None) -> str:
    return f"Muse {clip(version, 40)}" if version else "this Muse"


def delete_unavailable(version: str | None) -> RpcError:
    """``session/delete`` on a Muse without Muse's own ``session/delete`` (1.4.1 and 1.4.2 only)."""
    failure = Failure("deleteUnavailable", "host", retryable=False, phase="deleting")
    return failure.error(
        f"{_muse(version)} cannot delete sessions (Muse has session/delete only in 1.4.1 and "
        "1.4.2), so nothing was deleted and the session is still listed. Close it to put it "
        "away here; Muse keeps it in its own session store until you remove it there.",
        METHOD_NOT_FOUND,
    )


def delete_not_served(version: str | None) -> RpcError:
    """A Muse that has ``session/delete`` but did not serve it to this connection."""
    failure = Failure("deleteUnavailable", "host", retryable=False, phase="deleting")
    return failure.error(
        f"{_muse(version)} did not serve session/delete to muse-acp (it is part of Muse's "
        "experimental API, which this host did not open), so nothing was deleted and the "
        "session is still listed. Delete it in Muse itself, or close it to put it away here.",
        METHOD_NOT_FOUND,
    )


def fork_boundary_broken(version: str | None) -> RpcError:
    """A fork cut after a chosen turn, on a Muse that fails such forks (1.4.3 and 1.4.4)."""
    failure = Failure("forkBoundaryUnavailable", "host", retryable=False, phase="reading")
    return failure.error(
        f"{_muse(version)} cannot fork a session after a chosen turn: it refuses such forks "
        "although its protocol allows them (a known defect of Muse 1.4.3 and 1.4.4), so no "
        "fork was made. Fork without choosing a turn to copy the whole conversation (the same "
        "as choosing its last turn), or update Muse to fork at an earlier turn.",
        INVALID_PARAMS,
    )


def workspace_roots_unavailable(version: str | None, since: str | None, on_exec: bool) -> RpcError:
    """``additionalDirectories`` for a Muse that serves one workspace folder per session (older
    than ``since``, the first version taking several), or for the exec backend."""
    failure = Failure("workspaceRootsUnavailable", "host", retryable=False, phase="preparing")
    if on_exec:
        why = "The legacy exec backend runs `muse exec`, which works in one folder"
        remedy = f"use the MSP backend with Muse {since or 'Code'} or newer"
    else:
        muse = _muse(version)
        why = f"{muse[0].upper()}{muse[1:]} serves one workspace folder per session"
        if since is not None:
            why += f" (several workspaceRoots came in Muse {since})"
        remedy = f"update Muse to {since} or newer" if since else "update Muse"
    return failure.error(
        f"{why}, so no session was opened. To work in several folders at once, {remedy}; "
        "otherwise open the session without additionalDirectories and start a separate one "
        "for each other folder.",
        INVALID_PARAMS,
    )
