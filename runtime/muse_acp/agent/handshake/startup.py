"""What the agent knows before it has any session, and how it answers ``initialize``.

Contract: there is one ``Startup`` per ACP connection, made before anything else. It owns the
configuration, the environment hosts inherit, the launcher that starts them (``host.launch``),
the configured Muse executable (resolved and probed once: ``muse``), the backend chosen once
for the connection (``backend``; a failure of the chosen backend never makes the other one run
instead) and what ``initialize`` negotiated. Before any host runs, ``expected`` says what a host
of the executable would offer (``host.features``). ``answer_initialize`` answers from it alone:
the backend and Muse's version when the executable can be used, and otherwise a successful
answer all the same (the problem is logged, and shown to the client at its first session) so
that the client can still list its sessions.

This module and what it imports are everything ``initialize`` needs: none of the sessions'
machinery and none of the MSP models, which the agent loads once that answer is out
(``server``). ``AgentContext`` and ``Hosting`` read the executable and the backend from here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final

import anyio

from muse_acp.agent.handshake.capabilities import (
    InitializeParams,
    Negotiated,
    initialize_response,
    negotiate,
)
from muse_acp.config import AdapterConfig
from muse_acp.host.backends import BackendChoice, choose_backend
from muse_acp.host.binary import HostUnavailable, MuseBinary, probe, resolve_binary
from muse_acp.host.features import NO_FEATURES, HostFeatures, features_of
from muse_acp.host.launch import SUBPROCESSES, Launcher
from muse_acp.traces import Tracer, tracer_for
from muse_acp_wire import acp_handshake as acp

__all__ = ["Startup", "answer_initialize"]

logger: Final = logging.getLogger("muse_acp.agent")


class Startup:
    """The connection's configuration, executable, backend and negotiation (see the module
    contract)."""

    def __init__(
        self,
        config: AdapterConfig,
        environ: Mapping[str, str] | None = None,
        launcher: Launcher = SUBPROCESSES,
    ) -> None:
        self.config = config
        self.environ: Mapping[str, str] = environ if environ is not None else os.environ
        self.launcher = launcher
        """Starts every ``muse`` the connection runs but the exec backend's (``host.launch``)."""
        self.negotiated = Negotiated()
        self.tracer: Tracer | None = tracer_for(config, self.environ)
        """Records the connection and its hosts when the user asked for traces."""
        self._binary: MuseBinary | None = None
        self._binary_lock = anyio.Lock()
        self._backend: BackendChoice | None = None
        self._backend_lock = anyio.Lock()

    @property
    def probed(self) -> MuseBinary | None:
        """The configured Muse executable once ``muse`` has probed it (None before, or when
        it could not be used)."""
        return self._binary

    @property
    def chosen(self) -> BackendChoice | None:
        """The backend once ``backend`` has chosen it (None before, or when it could not)."""
        return self._backend

    def expected(self, binary: MuseBinary) -> HostFeatures:
        """What a host of ``binary`` would offer, decided from its probed version with the
        user's ``MUSE_ACP_TRUST_NEWER_HOST`` (see ``host.features``), before any host runs."""
        return features_of(binary.version, trust_newer=self.config.trust_newer_host)

    async def installed(self) -> HostFeatures:
        """What a host of the configured executable would offer (``expected``), or
        ``NO_FEATURES`` when it cannot be probed."""
        try:
            return self.expected(await self.muse())
        except HostUnavailable:
            return NO_FEATURES

    async def muse(self) -> MuseBinary:
        """The configured Muse executable, resolved and probed once (``serve`` is required
        only where a host is started: the exec backend runs Muse without it).

        Raises:
            HostUnavailable: it is missing or cannot be probed.
        """
        async with self._binary_lock:
            if self._binary is None:
                self._binary = await probe(
                    resolve_binary(self.config.muse_bin), launcher=self.launcher, env=self.environ
                )
            return self._binary

    async def backend(self) -> BackendChoice:
        """The backend serving this connection, chosen once and kept.

        Raises:
            HostUnavailable: the executable is missing, or cannot run the backend asked for.
        """
        async with self._backend_lock:
            if self._backend is None:
                binary = await self.muse()
                self._backend = await choose_backend(
                    self.config.backend, binary.path, launcher=self.launcher, env=self.environ
                )
                if self.tracer is not None:
                    report = self._backend.report()
                    self.tracer.decision(
                        "backend", {**report.model_dump(mode="json"), "version": binary.version}
                    )
            return self._backend


async def answer_initialize(startup: Startup, params: InitializeParams) -> acp.InitializeResponse:
    """Negotiate with the client and answer ``initialize`` (see the module contract)."""
    features = NO_FEATURES
    backend: acp.MuseBackendReport | None = None
    try:
        choice = await startup.backend()
        features, backend = startup.expected(choice.binary), choice.report()
    except HostUnavailable as error:
        logger.warning("%s", error.message)
        if startup.config.backend == "exec":
            backend = acp.MuseBackendReport(
                backend="exec", reason="exec was chosen with --backend or MUSE_ACP_BACKEND"
            )
    startup.negotiated = negotiate(params, features, backend)
    return initialize_response(startup.negotiated, backend)
