"""Checking a simulator frame against the bundle of the very version it plays.

``check_frame`` validates one frame with the generated models of ``bundle(version)`` (a version
played without a bundle of its own: the bundle it is played on); a
notification must be one that version publishes, with params its model accepts; a host request
likewise; an answer must fit the result model of the method it answers (errors: ``ErrorData``).
It is strict where the models are lenient: a member the version's model does not know is a
violation too (the models ignore unknown members, since peers evolve additively, but a host of
that version cannot have sent one).
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

from muse_acp.host.bindings import bindings_for
from muse_acp.sim.options.versions import HOST_VERSIONS, PLAYED
from muse_acp_wire import msp

VERSIONS = tuple(HOST_VERSIONS)
"""Every version muse-sim plays, oldest first."""


@cache
def bundle(version: str) -> ModuleType:
    """The generated module of ``version``'s own bundle, or of the one it is played on."""
    bindings = bindings_for(PLAYED[version])
    assert bindings.version == PLAYED[version], f"no bundle for {version}"
    return bindings.models()


def _unknown(data: Any, dumped: Any, where: str, found: list[str]) -> None:
    if isinstance(data, dict) and isinstance(dumped, dict):
        for key, value in data.items():
            if key not in dumped:
                found.append(f"{where}.{key}")
            else:
                _unknown(value, dumped[key], f"{where}.{key}", found)
    elif isinstance(data, list) and isinstance(dumped, list):
        for index, (item, known) in enumerate(zip(data, dumped, strict=False)):
            _unknown(item, known, f"{where}[{index}]", found)


def _check(model: type[BaseModel] | None, data: Any, where: str) -> list[str]:
    if model is None:
        return [] if data in (None, {}) else [f"{where}: expected no params, got {data!r}"]
    try:
        parsed = model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        return [f"{where}: {exc.error_count()} errors: {exc.errors()[0]}"]
    found: list[str] = []
    _unknown(data, parsed.model_dump(mode="json", by_alias=True, exclude_unset=True), where, found)
    return [f"unknown member {path}" for path in found]


@cache
def own_bundle(version: str) -> ModuleType | None:
    """The generated module of ``version``'s own bundle when it is played on an older one."""
    bindings = bindings_for(version)
    played = PLAYED[version] != version and bindings.version == version
    return bindings.models() if played else None


def check_frame(frame: dict[str, Any], version: str, answered: str | None = None) -> list[str]:
    """What is wrong with ``frame`` for a host of ``version`` (empty when nothing is).

    ``answered`` is the method a response answers (None for other frames). A version played on
    an older bundle may also send the members its own bundle declares (``Session.kind``)."""
    problems = _check_with(bundle(version), frame, version, answered)
    own = own_bundle(version)
    if own is None or not any(p.startswith("unknown member") for p in problems):
        return problems
    unknown_there = set(_check_with(own, frame, version, answered))
    return [p for p in problems if not p.startswith("unknown member") or p in unknown_there]


def _check_with(
    wire: ModuleType, frame: dict[str, Any], version: str, answered: str | None
) -> list[str]:
    method = frame.get("method")
    if isinstance(method, str) and "id" not in frame:
        spec = wire.CLIENT_NOTIFICATIONS.get(method)
        if spec is None:
            return [f"{method} is not a notification {version} publishes"]
        problems = _check(spec.params, frame.get("params"), method)
        if list(frame)[-1] != "emittedAtMs":
            problems.append(f"{method}: emittedAtMs is not the last envelope member")
        return problems
    if isinstance(method, str):
        spec = wire.CLIENT_REQUESTS.get(method)
        if spec is None:
            return [f"request {method} is not one {version} sends"]
        return _check(spec.params, frame.get("params"), f"request {method}")
    if "error" in frame:
        data = frame["error"].get("data")
        return _check(wire.ErrorData, data, f"error of {answered}")
    if answered is None:
        return []
    request = wire.HOST_REQUESTS.get(answered)
    if request is None and answered in EXPERIMENTAL:
        return _check(EXPERIMENTAL[answered], frame.get("result"), f"result of {answered}")
    if request is None:
        return [f"{answered} was answered but {version} does not serve it"]
    if answered == "view/page" and hasattr(wire, "UnframedViewNotification"):
        return _page(wire, frame.get("result"), version)
    return _check(request.result, frame.get("result"), f"result of {answered}")


EXPERIMENTAL: dict[str, type[BaseModel]] = {"account/read": msp.AccountState}
"""Experimental methods a stable bundle does not list, with the result muse-acp reads."""


def _page(wire: ModuleType, result: Any, version: str) -> list[str]:
    """A page of an ingested bundle: its events are typed only by their common members, so
    each is checked as the notification it names."""
    problems = [
        problem
        for problem in _check(wire.ViewPageResult, result, "result of view/page")
        if not problem.startswith("unknown member result of view/page.events")
    ]
    events = result.get("events", []) if isinstance(result, dict) else []
    for index, event in enumerate(events):
        spec = wire.CLIENT_NOTIFICATIONS.get(event.get("method"))
        where = f"result of view/page.events[{index}]"
        if spec is None:
            problems.append(f"{where}: {event.get('method')} is not one {version} publishes")
        else:
            problems += _check(spec.params, event.get("params"), f"{where}.params")
    return problems
