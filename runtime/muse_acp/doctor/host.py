"""The doctor's checks of the host: the MSP handshake, the features Muse's version gets, and
sign-in. The handshake's ``muse serve`` runs in a scratch folder within ``HANDSHAKE_TIMEOUT``
seconds and is always reaped."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.agent.commands.account import describe_credential
from muse_acp.config import ENV_MUSE_BIN, ENV_TRUST_NEWER
from muse_acp.doctor.findings import Account, Doctor, Section
from muse_acp.host.bindings import bindings_for, parse_version
from muse_acp.host.client import HostEnded, open_host
from muse_acp.host.features import NEEDS, HostFeatures, features_of
from muse_acp.host.versions import VERIFIED_HOSTS, Feature, newer_than_verified
from muse_acp.redact import redact
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import msp
from muse_acp_wire.msp_outlines import OUTLINES

__all__ = ["FEATURE_DESCRIPTIONS", "HANDSHAKE_TIMEOUT", "features", "handshake", "sign_in"]

FEATURE_DESCRIPTIONS: Final[Mapping[Feature, str]] = MappingProxyType(
    {
        "storedOutput": "whole tool outputs readable by clients",
        "mcpOverlay": "editor MCP servers through a private settings file",
        "taskControl": "clients can stop workflows and background tasks (_muse/task)",
        "workflowChildren": "a workflow child can be skipped or retried on its own",
        "planUsage": "the account's subscription usage in /status and usage updates",
        "goals": "the /goal command sets, pauses, resumes and clears Muse's goal",
        "planSkill": "Plan mode as Muse's own Plan skill",
        "nativeApprovalPolicy": "the approval policy option, kept by Muse",
        "sessionDelete": "session/delete removes the session from Muse itself",
        "turnForkBoundary": "a fork can end after a chosen turn",
        "workspaceRoots": "a session can work in several folders (additionalDirectories)",
    }
)
"""What each optional feature gives a user; a feature missing here shows its name."""

HANDSHAKE_TIMEOUT: Final = 30.0
"""Seconds the executable's ``serve`` may take to answer ``initialize`` during the doctor."""


async def _initialize(path: str, budget: float) -> tuple[msp.InitializeResult, Account]:
    """The host's handshake, and its account (or why it could not be read)."""
    with tempfile.TemporaryDirectory(prefix="muse-acp-doctor-") as scratch:
        async with open_host(path, cwd=scratch, startup_timeout=budget, experimental=True) as host:
            try:
                with anyio.fail_after(budget):
                    return host.info, await host.call("account/read", None, msp.AccountState)
            except TimeoutError:
                return host.info, f"it did not answer account/read within {budget:.0f}s"
            except RpcError as error:
                return host.info, f"it refused account/read: {redact(error.message, limit=200)}"


def _handshake_failure(error: BaseException, timeout: float) -> str:
    if isinstance(error, TimeoutError):
        return f"it did not answer MSP initialize within {timeout:.0f}s"
    if isinstance(error, HostEnded):
        reason = f"it ended before answering MSP initialize (exit code {error.exit_code})"
        last = next((line for line in reversed(error.stderr_tail.splitlines()) if line), "")
        return reason + (f"; its last words: {redact(last, limit=200)}" if last else "")
    if isinstance(error, RpcError):
        return f"its answer to MSP initialize was not a result: {redact(error.message, limit=200)}"
    if isinstance(error, ConnectionClosed):
        return "it closed its output before answering MSP initialize"
    return f"it could not be started: {redact(str(error), limit=200)}"


def handshake(doctor: Doctor) -> Section:
    section = Section("handshake", "MSP handshake")
    assert doctor.binary is not None
    assert doctor.config is not None
    if doctor.backend is not None and doctor.backend.exec:
        section.line("initialize", "not used: the exec backend speaks no MSP")
        section.facts.update(ok=None, skipped="exec backend")
        return section
    path = doctor.binary.path
    timeout = min(HANDSHAKE_TIMEOUT, doctor.config.deadlines.startup)
    started = time.monotonic()
    try:
        info, doctor.account = anyio.run(_initialize, path, timeout)
    except (RpcError, ConnectionClosed, OSError, TimeoutError) as error:
        why = _handshake_failure(error, timeout)
        section.line("initialize", f"NOT usable: {why}")
        section.facts.update(ok=False, error=why)
        section.problem = (
            f"the Muse executable {path} is not usable: {why}. Point --muse or "
            f"{ENV_MUSE_BIN} at Muse Code (1.1.1 or newer) or at `muse-sim`."
        )
        return section
    elapsed = time.monotonic() - started
    doctor.host_info = info
    server = f"{info.server_info.name} {info.server_info.version}"
    section.line("initialize", f"answered by {server} in {elapsed:.1f}s")
    # Muse's declarations make the durability optional: a host may leave it out.
    durability = info.session_durability or "durability not reported"
    section.line("sessions", f"{durability}; Muse home {info.muse_home}")
    section.facts.update(
        ok=True,
        server_name=info.server_info.name,
        server_version=info.server_info.version,
        session_durability=info.session_durability,
        muse_home=info.muse_home,
        seconds=round(elapsed, 3),
    )
    return section


def _why_off(feature: Feature, features: HostFeatures) -> str:
    """Why ``feature`` is off on a host whose features are ``features``."""
    if features.bundle is None:
        return "no MSP bundle covers this Muse"
    if feature not in features.withdrawn:
        return f"MSP {features.bundle} does not declare it"
    if feature in VERIFIED_HOSTS:
        verified = ", ".join(sorted(VERIFIED_HOSTS[feature]))
        if newer_than_verified(feature, features.version):
            return f"verified on {verified}; set {ENV_TRUST_NEWER}=1 to turn it on"
        return f"offered only on verified hosts ({verified})"
    return "known not to work on this Muse"


def features(doctor: Doctor) -> Section:
    section = Section("features", "Features")
    version = doctor.host_version
    on_exec = doctor.backend is not None and doctor.backend.exec
    trust_newer = doctor.config is not None and doctor.config.trust_newer_host
    features = features_of(version, trust_newer=trust_newer)
    if not on_exec and version is not None:
        bindings = bindings_for(version)
        newest = max(OUTLINES, key=lambda v: parse_version(v) or (0, 0, 0))
        if features.bundle is None:
            how = "none (this Muse is older than every bundle)"
        elif bindings.exact:
            how = f"MSP {bindings.version} (its own)"
        elif bindings.version == newest:
            how = f"MSP {bindings.version} (the newest: this Muse is newer than every bundle)"
        else:
            how = f"MSP {bindings.version} (the nearest older one)"
        section.line("bindings", f"{how} for Muse {version}")
        section.facts.update(bundle=features.bundle, exact_bundle=bindings.exact)
    width = max(map(len, NEEDS)) + 2
    for index, feature in enumerate(NEEDS):
        enabled = features.has(feature) and not on_exec
        description = FEATURE_DESCRIPTIONS.get(feature, feature)
        why = "" if enabled or on_exec else f" ({_why_off(feature, features)})"
        if enabled and feature in VERIFIED_HOSTS and version not in VERIFIED_HOSTS[feature]:
            why = f" (on because {ENV_TRUST_NEWER}=1 trusts newer hosts)"
        section.line(
            "features" if index == 0 else "",
            f"{feature:<{width}}{'on ' if enabled else 'off'}  {description}{why}",
        )
        section.facts[feature] = {
            "enabled": enabled,
            "verified": sorted(VERIFIED_HOSTS.get(feature, ())),
            "withdrawn": feature in features.withdrawn,
            "trustNewer": trust_newer,
        }
    return section


def sign_in(doctor: Doctor) -> Section:
    section = Section("sign_in", "Sign-in")
    account = doctor.account
    if account is None:
        section.line("credential", "not checked: only an MSP host reports it")
        section.facts.update(ok=None)
    elif isinstance(account, str):
        section.line("credential", f"unknown: {account}")
        section.facts.update(ok=None, error=account)
    elif account.credential_required and account.state == "loggedOut" and doctor.simulator:
        # Like Muse, the simulator starts signed out, and sessions ask for sign-in first.
        section.line("credential", "NONE: muse-sim, the simulator, is not signed in")
        section.facts.update(ok=False, state=account.state, simulator=True)
        section.problem = (
            "muse-sim, the Muse simulator, is not signed in, so editors would be asked to sign "
            "in at every new session. Run `muse-sim login` once (it plays signing in), then "
            "run the doctor again."
        )
    elif account.credential_required and account.state == "loggedOut":
        section.line("credential", "NONE: Muse has no credential, so every turn would fail")
        section.facts.update(ok=False, state=account.state)
        muse = doctor.binary.path if doctor.binary is not None else "muse"
        section.problem = (
            f"Muse is not signed in. Run `{muse} login` in a terminal, or export "
            "META_API_KEY where muse-acp runs, then run the doctor again."
        )
    else:
        section.line("credential", describe_credential(account))
        section.facts.update(ok=True, state=account.state)
    return section
