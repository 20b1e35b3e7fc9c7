"""A session's further workspace folders: the ACP ``additionalDirectories`` a client sends,
which reach Muse as ``workspaceRoots`` (the session's own folder first).

Contract: ``workspace_of`` checks a request's folders (``errors.workspace``) and ``accepted``
turns its additional directories into the session's further roots, in order, without repeats
or the ``cwd`` itself; they are refused with -32602 (``withdrawn.workspace_roots_unavailable``,
naming the Muse version) on the exec backend or a Muse without ``workspaceRoots``. ``take``
makes them the session's (``AcpSession.further_roots``): Muse gets its folder then these when
the session starts, or at the next turn once they changed or a host resumed the session.
Muse's session record names its primary root alone, so the further roots are kept in the
session's preference file under ``additionalDirectories``: ``remember`` writes that member alone
(removed when there are none) under the file's lock, keeping every other member and never
making a file a deletion removed; ``recall_many`` reads it for ``session/list`` (an unusable
member reads as none). File work runs in a worker thread within ``preferences.IO_TIMEOUT``; a
write given up on is not made later.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, Protocol

import anyio

from muse_acp.agent.errors.withdrawn import workspace_roots_unavailable
from muse_acp.agent.errors.workspace import MAX_ADDITIONAL, check_workspace, same_directory
from muse_acp.agent.handshake.startup import Startup
from muse_acp.agent.options.preference_files import (
    WriteClaim,
    read_document,
    session_lock,
    write_document,
)
from muse_acp.agent.options.preferences import IO_TIMEOUT, SCHEMA_VERSION, PreferenceStore
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.host.features import HostFeatures, first_declaring
from muse_acp.rpc import INTERNAL_ERROR, RpcError

__all__ = ["MEMBER", "accepted", "recall_many", "remember", "take", "workspace_of"]

MEMBER: Final = "additionalDirectories"
"""The preference file's member that holds a session's further roots."""


class _Placed(Protocol):
    """A session request naming its folders (new, load, resume, fork)."""

    cwd: str
    additional_directories: list[str] | None


async def workspace_of(
    startup: Startup, on_exec: Callable[[], Awaitable[bool]], params: _Placed
) -> tuple[str, tuple[str, ...]]:
    """A request's workspace (``errors.workspace.check_workspace``) and further roots
    (``accepted``; the installed Muse is looked at only when there are some)."""
    cwd = check_workspace(params.cwd, params.additional_directories)
    if not params.additional_directories:
        return cwd, ()
    features = await startup.installed()
    return cwd, accepted(cwd, params.additional_directories, features, await on_exec())


def accepted(
    cwd: str, additional: Sequence[str] | None, installed: HostFeatures, on_exec: bool
) -> tuple[str, ...]:
    """The session's further roots from a request (see the module contract)."""
    roots: list[str] = []
    for path in additional or ():
        if not same_directory(cwd, path) and not any(same_directory(r, path) for r in roots):
            roots.append(path)
    if roots and (on_exec or not installed.has("workspaceRoots")):
        raise workspace_roots_unavailable(
            installed.version, first_declaring("workspaceRoots"), on_exec
        )
    return tuple(roots)


def _save(path: Path, roots: tuple[str, ...], claim: WriteClaim) -> None:
    with session_lock(path) as renewed:
        document = read_document(path)
        if document is None and (renewed or not roots):
            return  # deleted meanwhile, or nothing to keep where nothing is stored
        document = document or {"schemaVersion": SCHEMA_VERSION}
        if document.get(MEMBER) == list(roots) or (not roots and MEMBER not in document):
            return
        if roots:
            document[MEMBER] = list(roots)
        else:
            document.pop(MEMBER, None)
        write_document(path, document, claim)


async def remember(store: PreferenceStore, session_id: str, roots: tuple[str, ...]) -> None:
    """Keep ``roots`` as the session's further roots.

    Raises:
        RpcError: ``INTERNAL_ERROR`` when the file cannot be used, or the write did not finish
            within ``IO_TIMEOUT``.
    """
    path = store.path_for(session_id)
    claim = WriteClaim()
    try:
        with anyio.fail_after(IO_TIMEOUT):
            await anyio.to_thread.run_sync(
                partial(_save, path, roots, claim), abandon_on_cancel=True
            )
    except TimeoutError:
        outcome = "nothing was saved" if claim.abandon() else "it may still be saved"
        raise RpcError(
            INTERNAL_ERROR,
            f"saving the session's additional directories did not finish within "
            f"{IO_TIMEOUT:g} s ({outcome})",
        ) from None


def _member(document: dict[str, Any] | None) -> tuple[str, ...]:
    value = (document or {}).get(MEMBER)
    if not isinstance(value, list) or len(value) > MAX_ADDITIONAL:
        return ()
    if not all(isinstance(path, str) and os.path.isabs(path) for path in value):
        return ()
    return tuple(value)


def _load_all(store: PreferenceStore, session_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for session_id in session_ids:
        try:
            found[session_id] = _member(read_document(store.path_for(session_id)))
        except RpcError:
            found[session_id] = ()  # the preference read tells what is wrong with the file
    return found


async def recall_many(
    store: PreferenceStore, session_ids: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Each session's further roots as stored (none where nothing usable is)."""
    try:
        with anyio.fail_after(IO_TIMEOUT):
            return await anyio.to_thread.run_sync(
                partial(_load_all, store, session_ids), abandon_on_cancel=True
            )
    except TimeoutError:
        return dict.fromkeys(session_ids, ())


async def take(store: PreferenceStore, session: AcpSession, further: tuple[str, ...]) -> list[str]:
    """Make ``further`` the session's further roots and keep them; when they differ from what it
    had (its live roots, else the stored ones), its next turn gives Muse the new list. What
    could not be kept is returned as a note for the user."""
    previous = (
        session.further_roots
        or (await recall_many(store, [session.session_id]))[session.session_id]
    )
    session.further_roots = further
    session.roots_unsent = session.roots_unsent or further != previous
    if further == previous:
        return []
    try:
        await remember(store, session.session_id, further)
    except RpcError as error:
        return [f"its additional directories were not saved ({error.message})"]
    return []
