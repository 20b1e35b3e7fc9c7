"""``session/delete``: a session leaves Muse's store, muse-acp's list and its records.

Contract: only a Muse with its own ``session/delete`` deletes (feature ``sessionDelete``: 1.4.1
and 1.4.2, on an experimental host of its own); the agent waits for ``session/deleteCompleted``
and then removes the session's preferences and closes its copy here, its hosts reaped, before
the answer. Every other Muse is refused up front (``withdrawn.delete_unavailable``), and so is
a host that does not serve it after all (``delete_not_served``): a session Muse keeps is never
answered "deleted". A session muse-acp never got Muse to store loses only muse-acp's records.
Tombstones that older releases of muse-acp wrote still hide their sessions (``tombstones``).
The legacy exec backend refuses it.

Errors, with nothing deleted: a session busy here (-32600); an unknown, workspace-less or
already deleted session (-32002); a session another Muse process holds (``sessionInUse``). Host
calls go through ``hosts.ask`` in the ``deleting`` phase. The first read may be withdrawn by a
cancel; the deletion is the request's commit.
"""

from __future__ import annotations

import logging
import os
from functools import partial
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors import failures
from muse_acp.agent.errors.withdrawn import delete_not_served, delete_unavailable
from muse_acp.agent.handshake.capabilities import not_on_exec
from muse_acp.agent.hosting.hosts import PROCESS_EXIT_BUDGET, HostKeeper, ask
from muse_acp.agent.options.preferences import SessionPreferences
from muse_acp.agent.sessions.history import read_row
from muse_acp.agent.sessions.session import AcpSession, check_session_id, shown_id
from muse_acp.host.bindings import error_kind
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.rpc import RESOURCE_NOT_FOUND, RequestContext, RpcError
from muse_acp.tasks import wait_first
from muse_acp.text import clip
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["DELETE_REASONS", "delete_natively", "handle_delete", "outcome_failure"]

logger: Final = logging.getLogger("muse_acp.agent")

DELETE_REASONS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "ownershipUnavailable": "Muse could not take it over (another process may hold it)",
        "sharedSource": "its stored history is shared with another session (a fork of it)",
        "writerBusy": "a turn is running or queued on it in Muse",
        "unsafeSource": "its stored files are not where Muse can delete them safely",
        "sourceChanged": "it changed while Muse was deleting it",
        "quiescenceFailed": "it did not come to rest in time to be deleted",
        "cancelled": "the deletion was cancelled in Muse",
        "storageFailure": "the file system refused to remove it",
        "cleanupIncomplete": "some of its files could not be removed",
        "unsupportedLayout": "it is stored in a layout this Muse cannot delete",
    }
)
"""Muse's reasons for a failed deletion (``session/deleteCompleted``), in our words."""

_PERMANENT: Final = frozenset({"sharedSource", "unsafeSource", "unsupportedLayout"})
_PHYSICAL: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "none": "Nothing was deleted.",
        "confirmed": "Part of it was already removed, so it may no longer load completely.",
    }
)
_PHYSICAL_POSSIBLE: Final = "Part of it may already have been removed."
_NOT_SERVED: Final = frozenset({"methodNotFound", "experimentalRequired"})


def outcome_failure(session_id: str, done: msp.SessionDeleteCompletedParams) -> RpcError:
    """The error for a deletion Muse reported as failed (an unknown change counts as possible)."""
    reason = done.reason
    words = DELETE_REASONS.get(reason) if reason else "Muse gave no reason"
    if words is None:
        words = f"Muse gave the reason {clip(reason or '', 100)!r}"
    failure = failures.Failure(
        reason or "deleteFailed", "host", retryable=reason not in _PERMANENT, phase="deleting"
    )
    physical = _PHYSICAL.get(done.physical_change or "", _PHYSICAL_POSSIBLE)
    advice = "Delete it again later." if failure.retryable else "Muse cannot delete it."
    return failure.error(
        f"Muse could not delete session {shown_id(session_id)}: {words}. {physical} The session "
        f"stays listed, with its title and settings. {advice}"
    )


def _held(session_id: str) -> RpcError:
    failure = failures.Failure("sessionInUse", "host", retryable=True, phase="deleting")
    return failure.error(
        f"Muse did not delete session {shown_id(session_id)}: another Muse host process holds it "
        "(MSP sessionInUse). Nothing was deleted. Close the session where it is open (another "
        "editor window, muse-acp or `muse` process), then delete it again."
    )


def _not_found(session_id: str) -> RpcError:
    return RpcError(
        RESOURCE_NOT_FOUND,
        f"Muse has no session {shown_id(session_id)}, so there is nothing to delete; pick one "
        "from session/list",
        {"sessionId": shown_id(session_id)},
    )


class _Missing(RpcError):
    """Muse has no such session (``sessionNotFound``)."""


class _NotServed(RpcError):
    """The host does not serve ``session/delete`` on this connection."""


def _refusal(session_id: str, error: RpcError) -> RpcError | None:
    """What Muse's refusal of a read or a ``session/delete`` means here."""
    kind = error_kind(error)
    if kind == "sessionNotFound":
        return _Missing(error.code, error.message, error.data)
    if kind == "sessionInUse":
        return _held(session_id)
    if kind in _NOT_SERVED:
        return _NotServed(error.code, error.message, error.data)
    return None


def _directory(*candidates: str | None) -> str:
    """The first of ``candidates`` that is a directory a host can start in (else this one)."""
    return next((c for c in candidates if c and os.path.isdir(c)), os.getcwd())


async def handle_delete(
    ctx: AgentContext, params: acp.DeleteSessionRequest, rctx: RequestContext
) -> acp.DeleteSessionResponse:
    if await ctx.on_exec():
        raise not_on_exec("session/delete")
    session_id = check_session_id(params.session_id)
    installed = await ctx.startup.installed()
    if not installed.has("sessionDelete"):
        raise delete_unavailable(installed.version)
    known = ctx.sessions.get(session_id)  # open, or closed with its hosts perhaps still going
    live = known if known is not None and not known.closed else None
    # Claims the session (-32600 while a prompt runs), so nothing starts on it meanwhile.
    work = live.begin("a deletion") if live is not None else None
    try:
        await _delete(ctx, session_id, known, rctx)
    finally:
        if live is not None and work is not None:
            live.end(work)
    if known is not None:
        known.close()
        with anyio.move_on_after(PROCESS_EXIT_BUDGET):
            await known.execution.wait_gone()
            await known.reader.wait_gone()
    return acp.DeleteSessionResponse()


async def _delete(
    ctx: AgentContext, session_id: str, known: AcpSession | None, rctx: RequestContext
) -> None:
    """Read what there is to delete, then (the request's commit) delete it."""
    await ctx.tombstones.refuse(session_id)
    kept = await ctx.preferences.read(session_id)
    here = known.cwd if known is not None else None
    row = await _muse_row(ctx, session_id, _directory(here, kept.created_cwd))
    if row is None:
        if (known is None or known.closed) and kept == SessionPreferences():
            raise _not_found(session_id)
        # Muse has nothing to delete (created here and never prompted, or only muse-acp's
        # records are left): the records go.
        async with rctx.commit():
            await ctx.tombstones.forget(session_id)
        return
    if not row.workspace_root:
        raise _not_found(session_id)
    async with rctx.commit():  # from here the deletion is made whole, whoever cancels
        await _delete_in_muse(ctx, session_id, _directory(here, row.workspace_root), known)
        await ctx.tombstones.forget(session_id)


async def _muse_row(ctx: AgentContext, session_id: str, cwd: str) -> msp.Session | None:
    """Muse's row of the session, read lease-free, or None when Muse has no such session."""
    async with ctx.catalog_host(cwd) as host:
        try:
            return await read_row(
                host, session_id, ctx.config.deadlines.read, partial(_refusal, session_id)
            )
        except _Missing:
            return None


async def _delete_in_muse(
    ctx: AgentContext, session_id: str, cwd: str, known: AcpSession | None
) -> None:
    """Delete the session in Muse, on an experimental host of its own."""
    if known is not None:
        # This agent's own hosts may hold the session's lease (its execution host, or the one
        # that forked it): they go first.
        known.execution.close()
        with anyio.move_on_after(PROCESS_EXIT_BUDGET):
            await known.execution.keeper.wait_clear()
    keeper = HostKeeper(
        f"deletion host of {session_id}",
        ctx.hosting,
        idle=ctx.config.deadlines.submit,
        experimental=True,
    )
    try:
        host = await keeper.obtain(cwd)
        async with keeper.holding(host):
            served = host.info.experimental_api and host.features.has("sessionDelete")
            if not served or not await delete_natively(
                host, session_id, ctx.config.deadlines.submit
            ):
                raise delete_not_served(host.version)
    finally:
        keeper.close()
        # Reaped before the answer, so nothing that follows races it for the lease.
        with anyio.CancelScope(shield=True), anyio.move_on_after(PROCESS_EXIT_BUDGET):
            await keeper.wait_gone()


async def delete_natively(host: MspHost, session_id: str, budget: float) -> bool:
    """Muse's ``session/delete`` on ``host`` (opted in to experimental methods), acknowledged
    within ``budget`` seconds and then waited for, another ``budget`` at most, until its
    ``session/deleteCompleted``; False when the host does not serve it after all.

    Raises:
        RpcError: the deletion failed, was refused or did not finish in time.
    """
    command_id = new_uuid7()
    outcomes: list[msp.SessionDeleteCompletedParams] = []
    settled = anyio.Event()

    async def on_event(method: str, params: WireModel) -> None:
        if (
            isinstance(params, msp.SessionDeleteCompletedParams)
            and params.command_id == command_id
            and params.outcome in ("completed", "failed")  # anything else: not finished yet
        ):
            outcomes.append(params)
            settled.set()

    listening = host.listen(session_id, on_event)
    try:
        ack = await ask(
            host,
            "session/delete",
            msp.SessionDeleteParams(command_id=command_id, session_id=session_id),
            msp.CommandAck,
            phase="deleting",
            budget=budget,
            refusal=partial(_refusal, session_id),
        )
        if ack.status == "noop":
            return True  # nothing left to delete
        try:
            with anyio.fail_after(budget):
                await wait_first(settled, host.dead)
        except TimeoutError:
            raise failures.deadline_exceeded("deleting", budget) from None
    except _NotServed:
        logger.info("this Muse does not serve session/delete after all (%s)", session_id)
        return False
    except _Missing:
        raise _not_found(session_id) from None
    finally:
        listening.close()
    if not outcomes:
        code, stderr_tail = await host.ended()
        raise failures.host_exited("deleting", code, stderr_tail)
    if outcomes[0].outcome == "failed":
        raise outcome_failure(session_id, outcomes[0])
    return True
