"""The base model and the table entry types every generated wire module uses.

Written by ``python -m codegen generate`` from ``codegen/templates/_base.py``; do not edit here.

Wire models parse by alias only (the camelCase wire names), accept snake_case names when code
constructs them, ignore members they do not know (peers evolve additively), and serialize by
alias. Dump with ``exclude_unset=True`` so that optional members a peer never sent stay absent
while required-nullable members that were set to ``None`` are written as ``null``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """Base class of every generated wire model."""

    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        defer_build=True,
    )


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A request method: the models of its params (None when it takes none) and its result."""

    method: str
    params: type[WireModel] | None
    result: type[WireModel]
    command: bool = False
    """True for MSP commands, whose params carry a client-minted UUIDv7 ``commandId``."""


@dataclass(frozen=True, slots=True)
class NotificationSpec:
    """A notification method and the model of its params (None when it takes none)."""

    method: str
    params: type[WireModel] | None


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """One row of a protocol's error registry."""

    code: int
    kind: str
    retryable: bool | None
    description: str


@dataclass(frozen=True, slots=True)
class BundleOutline:
    """What one MSP bundle declares, as plain data: enough to gate and route by version without
    importing (and so creating) the bundle's models."""

    version: str
    fingerprint: str
    host_requests: Mapping[str, bool]
    """Requests the host serves, each mapped to whether it is a command."""
    client_requests: frozenset[str]
    """Requests the host may send (approvals and questions as server requests)."""
    client_notifications: frozenset[str]
    """Notifications the host may send."""
    errors: tuple[ErrorSpec, ...]
    """The error registry."""
    models: Mapping[str, Mapping[str, bool]]
    """Every model by class name: its fields (Python names), each mapped to whether it is
    required."""
    variants: Mapping[str, frozenset[str]]
    """Every tag table (``ITEM_VARIANTS``, ...) by name: the tags it holds."""


class LazyOutlines(Mapping[str, BundleOutline]):
    """Bundle outlines by host version, each imported from its own module (its ``OUTLINE``) the
    first time it is looked up: knowing which bundles exist reads none of them."""

    __slots__ = ("_modules",)

    def __init__(self, modules: Mapping[str, str]) -> None:
        self._modules = dict(modules)

    def __getitem__(self, version: str) -> BundleOutline:
        outline: BundleOutline = importlib.import_module(self._modules[version]).OUTLINE
        return outline

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)
