"""The MSP bindings a Muse host is read with, chosen by the fingerprint or version it reports.

Contract: ``muse_acp_wire.msp`` is the vocabulary every part of muse-acp builds and reads MSP
frames with (the configured bundle's models, and the newer types it adds).
``bindings_for(version, fingerprint)`` gives a host's own bundle (its requests, notifications,
error registry, fingerprint and models): the bundle whose schema fingerprint (stable or
experimental) the host reported, else the host's version, else the nearest older bundle (a host
newer than every bundle: the newest), else the oldest. Bindings are read from the generated
outlines, so a bundle's models are imported only when asked for (``models()``), and a bundle
added to ``spec/msp/`` needs no edit here. ``error_kind`` reads the kind of a host's error from its
``data``, falling back to the registry row of its code.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType, ModuleType
from typing import Final

from pydantic import ValidationError

from muse_acp.rpc import RpcError
from muse_acp_wire._base import BundleOutline, ErrorSpec
from muse_acp_wire.msp_bundles import BUNDLES, FINGERPRINTS
from muse_acp_wire.msp_outlines import OUTLINES

__all__ = ["Bindings", "bindings_for", "error_kind", "parse_version"]

_VERSION: Final = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """The first ``X.Y.Z`` in ``text`` as numbers, or None when it holds none."""
    match = _VERSION.search(text or "")
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


@dataclass(frozen=True, slots=True)
class Bindings:
    """One MSP bundle: what a host of its version serves and publishes."""

    version: str
    """The bundle's host version (``1.2.1``)."""
    exact: bool
    """The host reported exactly this version (False: the nearest bundle was chosen)."""
    by_fingerprint: bool
    """The host reported a schema fingerprint of this bundle, which chose it."""
    fingerprint: str
    host_requests: Mapping[str, bool]
    """Requests the host serves, each mapped to whether it is a command."""
    client_notifications: frozenset[str]
    """Notifications the host may send."""
    client_requests: frozenset[str]
    """Requests the host may send (approvals and questions as server requests)."""
    errors: Mapping[int, ErrorSpec]
    """The error registry by code."""
    outline: BundleOutline
    """Everything the bundle declares, its models' fields included."""

    def serves(self, method: str) -> bool:
        return method in self.host_requests

    def declares(self, model: str) -> bool:
        """Whether the bundle has a model named ``model``."""
        return model in self.outline.models

    def fields(self, model: str) -> Mapping[str, bool]:
        """The fields of ``model`` (each mapped to whether it is required); empty when the
        bundle has no such model."""
        return self.outline.models.get(model, MappingProxyType({}))

    def models(self) -> ModuleType:
        """The bundle's generated module, for checks of a frame against this very version
        (importing it creates every model of the bundle)."""
        return importlib.import_module(BUNDLES[self.version])


def _bundle_versions() -> list[tuple[tuple[int, int, int], str]]:
    found = [(parse_version(version), version) for version in OUTLINES]
    return sorted((key, version) for key, version in found if key is not None)


@cache
def _load(version: str, exact: bool, by_fingerprint: bool = False) -> Bindings:
    outline = OUTLINES[version]
    return Bindings(
        version=version,
        exact=exact,
        by_fingerprint=by_fingerprint,
        fingerprint=outline.fingerprint,
        host_requests=outline.host_requests,
        client_notifications=outline.client_notifications,
        client_requests=outline.client_requests,
        errors=MappingProxyType({row.code: row for row in outline.errors}),
        outline=outline,
    )


def bindings_for(host_version: str | None, fingerprint: str | None = None) -> Bindings:
    """The bundle a host reporting ``host_version`` and the schema ``fingerprint`` is read with
    (see the module contract)."""
    versions = _bundle_versions()
    wanted = parse_version(host_version)
    known = FINGERPRINTS.get(fingerprint or "")
    if known is not None:
        return _load(known, parse_version(known) == wanted, True)
    if wanted is None:
        return _load(versions[-1][1], False)
    older = [version for key, version in versions if key <= wanted]
    chosen = older[-1] if older else versions[0][1]
    return _load(chosen, parse_version(chosen) == wanted)


def error_kind(error: RpcError, bindings: Bindings | None = None) -> str | None:
    """The host's kind for ``error``: ``data.kind``, else its code's registry row, else None."""
    if isinstance(error.data, dict):
        from muse_acp_wire import msp  # the vocabulary; loaded by any host connection anyway

        try:
            data = msp.ErrorData.model_validate(error.data, by_alias=True, by_name=False)
        except ValidationError:
            data = None
        if data is not None:
            return data.kind
    registry = (bindings or bindings_for(None)).errors
    row = registry.get(error.code)
    return row.kind if row is not None else None
