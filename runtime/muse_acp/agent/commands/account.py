"""Muse's account as the agent reaches it: the exported API key, the credential Muse reports,
and signing out.

Contract: Muse owns its credentials. ``api_key_configured`` says whether ``META_API_KEY`` is
exported to the agent. ``read_account`` asks Muse which credential it would use
(``account/read``) on an experimental host of its own in the temporary directory, within the
startup and read deadlines, and gives None for a Muse without that method; other failures are
the mapped host failure (``hosts.ask``). ``read_account_and_models`` also asks that host for the
model catalog (``model/list``), sparing a second host when both are needed at once.
``account_meta`` turns the answer into ``authenticate``'s ``_meta["muse/account"]``, or the
failure the chosen method meets (``signed_out``, ``credential_not_chosen``); Muse's label is
redacted and bounded, and no credential ever appears. ``run_muse_logout`` closes every session
and host first, then runs ``muse logout`` within ``LOGOUT_TIMEOUT``; an exported key cannot be
removed by logging out.
"""

from __future__ import annotations

import logging
import tempfile
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.agent.announcements.catalog import list_models
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.hosts import HostKeeper, ask
from muse_acp.redact import redact
from muse_acp.rpc import INTERNAL_ERROR, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "API_KEY_METHOD",
    "API_KEY_VARIABLE",
    "LOGOUT_TIMEOUT",
    "NO_ACCOUNT_SURFACE",
    "account_meta",
    "api_key_configured",
    "describe_credential",
    "read_account",
    "read_account_and_models",
    "run_muse_logout",
]

logger: Final = logging.getLogger("muse_acp.agent")

API_KEY_VARIABLE: Final = "META_API_KEY"
API_KEY_METHOD: Final = "meta-api-key"
"""The ``authenticate`` method that uses the exported ``META_API_KEY``."""
LOGOUT_TIMEOUT: Final = 30.0
LOGOUT_OUTPUT_LIMIT: Final = 65536
"""Bytes of ``muse logout``'s output read (it is not shown; only its status counts)."""
NO_ACCOUNT_SURFACE: Final = frozenset({"methodNotFound", "experimentalRequired"})
"""Host error kinds that say this Muse cannot answer ``account/read`` at all."""

_STATE_LIMIT: Final = 100
_LABEL_LIMIT: Final = 200
_CREDENTIAL_WORDS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "loggedOut": "no credential",
        "envKey": "the exported META_API_KEY",
        "apiKey": "an API key it stored",
        "accountLogin": "a signed-in Muse account",
    }
)


def api_key_configured(ctx: AgentContext) -> bool:
    return bool(ctx.environ.get(API_KEY_VARIABLE, "").strip())


async def read_account(ctx: AgentContext) -> msp.AccountState | None:
    """The credential Muse reports in effect, or None when this Muse cannot say.

    Raises:
        RpcError: the mapped host failure (the host did not start, went away, refused or did
            not answer in time), or ``HostUnavailable``.
    """
    account, _ = await read_account_and_models(ctx, models=False)
    return account


async def read_account_and_models(
    ctx: AgentContext, *, models: bool
) -> tuple[msp.AccountState | None, msp.ModelListResult | None]:
    """``read_account``'s answer and, with ``models``, Muse's model catalog read on the same
    host (None without ``models``, or where Muse cannot report its account).

    Raises:
        RpcError: as ``read_account``.
    """
    deadlines = ctx.config.deadlines
    budget = deadlines.read
    overall = deadlines.startup + budget
    keeper = HostKeeper("account host", ctx.hosting, idle=budget, experimental=True)
    try:
        # Each step has its own bound; this one also covers probing the executable.
        with anyio.fail_after(overall):
            host = await keeper.start(tempfile.gettempdir())
            async with keeper.holding(host):
                account = await ask(
                    host,
                    "account/read",
                    None,
                    msp.AccountState,
                    phase="authenticating",
                    budget=budget,
                )
                if not models:
                    return account, None
                return account, await list_models(host, budget)
    except TimeoutError:
        raise failures.deadline_exceeded("authenticating", overall) from None
    except failures.HostRefusal as refusal:
        if refusal.host_kind not in NO_ACCOUNT_SURFACE:
            raise
        logger.warning("this Muse cannot report its account (%s)", refusal.host_kind)
        return None, None
    finally:
        keeper.close()


def _label(account: msp.AccountState) -> str | None:
    label = redact((account.label or "").strip(), limit=_LABEL_LIMIT)
    return label or None


def describe_credential(account: msp.AccountState) -> str:
    """Words for the credential ``account`` reports, with its label when it has one."""
    words = _CREDENTIAL_WORDS.get(account.state)
    if words is None:
        words = f"a credential of the kind {clip(account.state, _STATE_LIMIT)!r}"
    label = _label(account)
    return f"{words} ({label})" if label else words


def account_meta(method_id: str, account: msp.AccountState) -> acp.MuseAuthenticateMeta:
    """What ``authenticate`` with ``method_id`` answers for ``account`` (pure).

    Raises:
        RpcError: ``signed_out`` or ``credential_not_chosen`` (see the module contract).
    """
    needed = account.credential_required
    if needed and account.state == "loggedOut" and method_id != API_KEY_METHOD:
        raise failures.signed_out()
    if needed and method_id == API_KEY_METHOD and account.state != "envKey":
        raise failures.credential_not_chosen(describe_credential(account))
    state = redact(account.state.strip(), limit=_STATE_LIMIT) or "unspecified"
    return acp.MuseAuthenticateMeta(
        muse_account=acp.MuseAccount(state=state, label=_label(account), credential_required=needed)
    )


async def run_muse_logout(ctx: AgentContext) -> None:
    """Close every session and host of this agent, then run ``muse logout``.

    Raises:
        RpcError: ``muse logout`` failed or did not finish in time (sessions are closed).
        HostUnavailable: there is no usable Muse executable.
    """
    for session in ctx.sessions.open_sessions():
        session.close()
    ctx.close_catalog_host()
    binary = await ctx.hosting.muse()
    done = await ctx.startup.launcher.run(
        [binary.path, "logout"],
        cwd=None,
        env=ctx.environ,
        budget=LOGOUT_TIMEOUT,
        limit=LOGOUT_OUTPUT_LIMIT,
    )
    if done.status is None:
        raise RpcError(INTERNAL_ERROR, "`muse logout` did not finish in time")
    if done.status != 0:
        raise RpcError(
            INTERNAL_ERROR,
            f"`muse logout` failed with exit code {done.status}; sessions were closed",
        )
