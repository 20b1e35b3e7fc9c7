"""What the agent knows before it has any session, and how it answers ``initialize``.

Contract: one ``Startup`` per ACP connection, made first, owns the configuration, the
environment and launcher of hosts, the Muse executable (probed once: ``muse``), the backend
(chosen once: ``backend``; a failing backend never makes the other one run) and what
``initialize`` negotiated; ``expected`` says what a host of the executable would offer.
``answer_initialize`` (``initialize_answer``, also before the event loop runs: ``early``, then
``adopt``) never waits on the executable: it answers from this process's probe, else the one
remembered from an earlier start (``host.executable_memory``, within ``RECALL_BUDGET``), else
defaults true of any Muse (no version-dependent extension, no backend named). ``settle``,
which every later request awaits (``server``), waits for the probe, withdraws what the
executable turned out not to offer (never adds), remembers the probe (written only when the
memory holds another), and logs a Muse that cannot be used (the client sees it at its first
session). This module and its imports are all ``initialize`` needs: the sessions' machinery
and the MSP models load after its answer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.agent.handshake.capabilities import (
    InitializeParams,
    Negotiated,
    initialize_response,
    negotiate,
    within,
)
from muse_acp.config import AdapterConfig, BackendSetting
from muse_acp.host.backends import BackendChoice, choose_backend, decide
from muse_acp.host.binary import HostUnavailable, MuseBinary, probe, probed, resolve_binary
from muse_acp.host.executable_memory import memory_dir, recall, remember_probe
from muse_acp.host.features import NO_FEATURES, HostFeatures, features_of
from muse_acp.host.launch import SUBPROCESSES, Launcher
from muse_acp_wire import acp_handshake as acp

if TYPE_CHECKING:
    from muse_acp.traces import Tracer

__all__ = [
    "NOT_IN_TIME",
    "RECALL_BUDGET",
    "Startup",
    "answer_initialize",
    "foreseen_backend",
    "initialize_answer",
    "known_binary",
]

logger: Final = logging.getLogger("muse_acp.agent")

RECALL_BUDGET: Final = 1.0
"""Seconds ``initialize`` may spend reading what is remembered of the executable, and a probe's
remembering may take: a data directory that does not answer costs no more."""


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
        self.tracer: Tracer | None = None
        """Records the connection and its hosts when the user asked for traces."""
        if config.trace != "off":
            # Only a traced connection loads the recorder: an untraced start answers
            # initialize without it.
            from muse_acp.traces import tracer_for

            self.tracer = tracer_for(config, self.environ)
        self._binary: MuseBinary | None = None
        self._binary_lock = anyio.Lock()
        self._backend: BackendChoice | None = None
        self._backend_lock = anyio.Lock()
        self._asked: InitializeParams | None = None
        self._settled = False
        self._settle_lock = anyio.Lock()

    @property
    def probed(self) -> MuseBinary | None:
        """The configured Muse executable once ``muse`` has probed it (None before, or when
        it could not be used)."""
        return self._binary

    @property
    def settled(self) -> bool:
        """``settle`` has run: what depends on the executable is in line with it."""
        return self._settled

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
        if self._binary is not None:
            return self._binary  # probed once and kept: no lock to take (nor a loop pass)
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
        if self._backend is not None:
            return self._backend  # chosen once and kept: every prompt asks, none waits
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

    async def foreseen(self) -> BackendChoice | None:
        """The backend, as chosen or as what is known of the executable decides it, without
        running it; None when nothing usable is known in time (``RECALL_BUDGET``)."""
        if self._backend is not None:
            return self._backend
        try:
            with anyio.fail_after(RECALL_BUDGET):
                known = await anyio.to_thread.run_sync(
                    known_binary, self.config, abandon_on_cancel=True
                )
        except TimeoutError:
            logger.info(NOT_IN_TIME)
            return None
        return foreseen_backend(self.config.backend, known)

    async def settle(self) -> None:
        """Probe the executable (once), bring the negotiation in line with it and remember
        the probe (see the module contract); a Muse that cannot be used is logged."""
        if self._settled:
            return  # every request after the first asks: no lock to take (nor a loop pass)
        async with self._settle_lock:
            if self._settled:
                return
            try:
                choice = await self.backend()
            except HostUnavailable as error:
                logger.warning("%s", error.message)
                self._settled = True
                return
            if self._asked is not None:
                actual = negotiate(self._asked, self.expected(choice.binary), choice.report())
                self.negotiated = within(self.negotiated, actual)
            self._settled = True
            # Compared with what the memory holds, by the memory, not with what initialize
            # recalled: the probe may settle before initialize comes (it starts with the
            # connection), and what initialize knew may be this process's own probe.
            await self._remember(choice.binary)

    async def _remember(self, binary: MuseBinary) -> None:
        folder = memory_dir(self.config.data_dir)
        try:
            with anyio.fail_after(RECALL_BUDGET):
                await anyio.to_thread.run_sync(
                    remember_probe, folder, binary, abandon_on_cancel=True
                )
        except (OSError, TimeoutError) as error:
            logger.info("could not remember the probe of %s: %s", binary.path, error)

    def asked(self, params: InitializeParams) -> None:
        """Keep what the client asked at ``initialize``, for ``settle``."""
        self._asked = params

    def adopt(self, params: InitializeParams, negotiated: Negotiated) -> None:
        """Take an ``initialize`` answered before the event loop ran (``early``): what the
        client asked and what was negotiated."""
        self.negotiated = negotiated
        self.asked(params)


NOT_IN_TIME: Final = "what is remembered of the Muse executable did not come in time"


def known_binary(config: AdapterConfig) -> MuseBinary | None:
    """The probe this process made of the configured executable, else the remembered one
    (blocking: it looks the executable up and reads the memory; runs no Muse)."""
    try:
        path = resolve_binary(config.muse_bin)
    except HostUnavailable:
        return None
    return probed(path) or recall(memory_dir(config.data_dir), path).probe


def foreseen_backend(setting: BackendSetting, known: MuseBinary | None) -> BackendChoice | None:
    """The backend ``known`` decides for ``setting``, without running it; None when it cannot
    be foreseen (nothing known, or ``exec --help`` never probed where exec may be chosen)."""
    if known is None or (known.exec_flags is None and (setting == "exec" or not known.serves)):
        return None
    try:
        return decide(setting, known)
    except HostUnavailable:
        return None


def initialize_answer(
    config: AdapterConfig, params: InitializeParams, choice: BackendChoice | None
) -> tuple[Negotiated, acp.InitializeResponse]:
    """The negotiation with a client asking ``params`` and its ``initialize`` result, on the
    backend ``choice`` foresaw (None: defaults true of any Muse, see the module contract).

    Raises:
        RpcError: INVALID_PARAMS for a Muse opt-in the extension schema refuses.
    """
    features = NO_FEATURES
    backend: acp.MuseBackendReport | None = None
    if choice is not None:
        features = features_of(choice.binary.version, trust_newer=config.trust_newer_host)
        backend = choice.report()
    elif config.backend == "exec":
        backend = acp.MuseBackendReport(
            backend="exec", reason="exec was chosen with --backend or MUSE_ACP_BACKEND"
        )
    negotiated = negotiate(params, features, backend)
    return negotiated, initialize_response(negotiated, backend)


async def answer_initialize(startup: Startup, params: InitializeParams) -> acp.InitializeResponse:
    """Negotiate with the client and answer ``initialize`` (see the module contract)."""
    choice = await startup.foreseen()
    startup.negotiated, response = initialize_answer(startup.config, params, choice)
    startup.asked(params)
    return response
