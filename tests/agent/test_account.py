"""What ``authenticate`` makes of the credential Muse reports, and how it asks for it."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.commands import account
from muse_acp.agent.commands.account import account_meta, describe_credential, read_account
from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting.hosts import HostKeeper
from muse_acp.config import AdapterConfig, Deadlines
from muse_acp.rpc import AUTH_REQUIRED, RpcError
from muse_acp.sim.launcher import write_launcher
from muse_acp.sim.options.accounts import LOGIN_LABEL, login
from muse_acp_wire import acp, msp

WAIT = 30.0


def _account(state: str, label: str | None = None, *, required: bool = True) -> msp.AccountState:
    raw: dict[str, Any] = {"state": state, "credentialRequired": required}
    if label is not None:
        raw["label"] = label
    return msp.AccountState.model_validate(raw)


def _meta(method: str, state: msp.AccountState) -> dict[str, Any]:
    dumped: dict[str, Any] = account_meta(method, state).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    return dumped


def _failure(error: RpcError) -> acp.MuseFailure:
    return acp.MuseFailureData.model_validate(error.data).failure


@pytest.mark.parametrize(
    ("method", "state", "label", "expected"),
    [
        ("muse-login", "accountLogin", "ada@example.com", "ada@example.com"),
        ("muse-login", "apiKey", "stored key", "stored key"),
        ("muse-login", "envKey", None, None),
        ("meta-api-key", "envKey", "META_API_KEY", "META_API_KEY"),
        ("muse-login", "accountLogin", "   ", None),
    ],
)
def test_a_usable_credential_is_reported_by_kind_and_label(
    method: str, state: str, label: str | None, expected: str | None
) -> None:
    meta = _meta(method, _account(state, label))
    reported = {"state": state, "credentialRequired": True}
    if expected is not None:
        reported["label"] = expected
    assert meta == {"muse/account": reported}


@pytest.mark.parametrize("method", ["muse-login", "meta-api-key"])
def test_no_credential_is_fine_where_the_provider_needs_none(method: str) -> None:
    meta = _meta(method, _account("loggedOut", required=False))
    assert meta == {"muse/account": {"state": "loggedOut", "credentialRequired": False}}


def test_signed_out_is_auth_required_with_how_to_sign_in() -> None:
    with pytest.raises(RpcError) as raised:
        account_meta("muse-login", _account("loggedOut"))
    error = raised.value
    assert error.code == AUTH_REQUIRED
    assert "`muse login`" in error.message
    assert "META_API_KEY" in error.message
    failure = _failure(error)
    assert (failure.kind, failure.phase, failure.execution) == (
        "authRequired",
        "authenticating",
        "notSubmitted",
    )
    assert not failure.retryable


@pytest.mark.parametrize(
    ("state", "label", "found"),
    [
        ("accountLogin", "ada@example.com", "a signed-in Muse account (ada@example.com)"),
        ("apiKey", "stored key", "an API key it stored (stored key)"),
        ("loggedOut", None, "no credential"),
        ("deviceToken", None, "a credential of the kind 'deviceToken'"),
    ],
)
def test_the_api_key_method_says_what_muse_uses_instead(
    state: str, label: str | None, found: str
) -> None:
    with pytest.raises(RpcError) as raised:
        account_meta("meta-api-key", _account(state, label))
    error = raised.value
    assert error.code == AUTH_REQUIRED
    assert f"Muse reports that it uses {found}, not the key." in error.message
    assert _failure(error).kind == "credentialNotUsed"


def test_host_text_is_redacted_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "mk-canary-0123456789abcdef"
    monkeypatch.setenv("META_API_KEY", canary)
    label = f"key {canary} " + "x" * 500
    meta = _meta("muse-login", _account("apiKey", label))
    reported = meta["muse/account"]["label"]
    assert canary not in reported
    assert len(reported) <= 200
    assert canary not in describe_credential(_account("apiKey", label))
    with pytest.raises(RpcError) as raised:
        account_meta("meta-api-key", _account("apiKey", label))
    assert canary not in raised.value.message
    blank = _meta("muse-login", _account("   ", required=False))
    assert blank["muse/account"]["state"] == "unspecified"


# -- asking a real (simulated) host ------------------------------------------------------------


def _muse(tmp_path: Path, faults: str = "") -> Path:
    return write_launcher(tmp_path / "muse", version="1.4.2", home=tmp_path / "home", faults=faults)


async def _read(ctx: AgentContext) -> msp.AccountState | None:
    """``read_account`` with the agent's task group in place; its error, if any, unwrapped."""
    outcome: list[msp.AccountState | RpcError | None] = []
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            ctx.hosting.attach(tasks)
            try:
                outcome.append(await read_account(ctx))
            except RpcError as error:
                outcome.append(error)
            tasks.cancel_scope.cancel()
    if isinstance(outcome[0], RpcError):
        raise outcome[0]
    return outcome[0]


def _context(tmp_path: Path, faults: str = "", **deadlines: float) -> AgentContext:
    config = AdapterConfig(
        muse_bin=str(_muse(tmp_path, faults)),
        data_dir=tmp_path / "data",
        deadlines=Deadlines(**deadlines),
    )
    return AgentContext(config, {"PATH": "/usr/bin:/bin"})


@pytest.mark.anyio
async def test_the_account_is_read_from_a_host_opted_in_to_experimental_methods(
    tmp_path: Path,
) -> None:
    login(tmp_path / "home")
    found = await _read(_context(tmp_path))
    assert found is not None
    assert (found.state, found.label) == ("accountLogin", LOGIN_LABEL)


@pytest.mark.anyio
async def test_a_muse_that_cannot_report_its_account_gives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host that answers account/read as an experimental method it will not serve.
    monkeypatch.setattr(account, "HostKeeper", partial(_not_opted_in, HostKeeper))
    assert await _read(_context(tmp_path)) is None


def _not_opted_in(keeper: type[HostKeeper], *args: Any, **kwargs: Any) -> HostKeeper:
    kwargs["experimental"] = False
    return keeper(*args, **kwargs)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("faults", "kind", "phase"),
    [
        ("hang-ack:account/read", "deadlineExceeded", "authenticating"),
        ("exit-before-ack:account/read", "hostExited", "authenticating"),
        ("exit:handshake", "hostExited", "starting"),
    ],
)
async def test_a_host_that_fails_is_the_mapped_host_failure(
    tmp_path: Path, faults: str, kind: str, phase: str
) -> None:
    ctx = _context(tmp_path, faults, read=1.0)
    with pytest.raises(RpcError) as raised:
        await _read(ctx)
    failure = _failure(raised.value)
    assert (failure.kind, failure.phase) == (kind, phase)
