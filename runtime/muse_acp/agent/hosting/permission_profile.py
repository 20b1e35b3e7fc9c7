"""Muse's saved permission profile, where it decides whether a host of muse-acp can run a session.

Contract: Muse's settings file names the profile new sessions get (``permissions.default_profile``).
The built-in ``:auto-review`` needs Muse's automated reviewer, which ``muse serve`` does not run:
such a host refuses to start any session while that profile is saved (MSP -32603, "permission
profile ':auto-review' cannot be used ... the automated reviewer is unavailable on this host"),
and refuses to resume a session ``muse exec`` created under it. ``interactive(settings)`` is what
a host of muse-acp reads in their place (through the settings overlay, ``mcp_overlay``): the same
document with ``:ask-me``, the same access with the user deciding each action (which the editor
asks), for ``:auto-review``; None when the settings need no change. ``profile_refusal`` turns
that refusal into the user's error, saying why and what to do, or returns None for any other;
``overlay_failed`` is the error when the overlay that would avoid it cannot be made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from muse_acp.agent.errors.failures import Failure
from muse_acp.rpc import INTERNAL_ERROR, RpcError
from muse_acp.text import clip

__all__ = ["AUTO_REVIEW", "INTERACTIVE", "interactive", "overlay_failed", "profile_refusal"]

AUTO_REVIEW: Final = ":auto-review"
"""The built-in profile whose automated reviewer ``muse serve`` does not run."""
INTERACTIVE: Final = ":ask-me"
"""The built-in profile with ``:auto-review``'s access in which the user decides each action."""
_PERMISSIONS: Final = "permissions"
_DEFAULT_PROFILE: Final = "default_profile"
_REFUSED: Final = re.compile(r"permission profile '([^'\n]{1,100})' cannot be used")
_NO_REVIEWER: Final = "reviewer is unavailable"


def interactive(settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """``settings`` with ``:ask-me`` in place of a saved ``:auto-review`` (see the module
    contract), every other member as it is; None when they save no ``:auto-review``."""
    permissions = settings.get(_PERMISSIONS)
    if not isinstance(permissions, Mapping) or permissions.get(_DEFAULT_PROFILE) != AUTO_REVIEW:
        return None
    return {**settings, _PERMISSIONS: {**permissions, _DEFAULT_PROFILE: INTERACTIVE}}


def profile_refusal(error: RpcError, method: str, session_id: str) -> RpcError | None:
    """The user's error for a host that cannot run ``session_id`` under its permission profile
    (answering ``method``: ``session/start`` or ``session/resume``), or None for any other
    refusal. Nothing was submitted; retrying alone does not help."""
    found = _REFUSED.search(error.message) if error.code == INTERNAL_ERROR else None
    if found is None or _NO_REVIEWER not in error.message:
        return None
    profile, session = found.group(1), clip(session_id, 100)
    failure = Failure("permissionProfileUnavailable", "host", retryable=False, phase="starting")
    if method == "session/resume":
        return failure.error(
            f"Muse cannot continue session {session} here: it was saved under the permission "
            f"profile {profile!r}, whose automated reviewer the Muse host muse-acp runs (`muse "
            "serve`) does not have, and a saved session keeps the profile it was created with. "
            "Nothing was sent to the model. Continue this conversation in Muse itself, or start "
            "a new session here (new sessions get an interactive profile)."
        )
    return failure.error(
        f"Muse would not start session {session} under the permission profile {profile!r}: it "
        "needs an automated reviewer the Muse host muse-acp runs (`muse serve`) does not have. "
        "Nothing was sent to the model. Set `permissions.default_profile` in your Muse settings "
        f"to an interactive profile such as {INTERACTIVE!r}, then send the prompt again."
    )


def overlay_failed(problem: str) -> RpcError:
    """The private settings that give a host an interactive profile could not be made
    (``problem`` says why and what to fix); no host was started."""
    failure = Failure("settingsOverlayFailed", "adapter", retryable=False, phase="starting")
    return failure.error(
        f"muse-acp could not give Muse the settings it needs for this session: your Muse "
        f"settings save the permission profile {AUTO_REVIEW!r}, which the Muse host muse-acp "
        f"runs cannot use, and {problem} Nothing was sent to the model; fix that, or set "
        f"`permissions.default_profile` in your Muse settings to {INTERACTIVE!r}, then send the "
        "prompt again."
    )
