"""Recorded MSP traffic against the generated ``muse_acp_wire.msp_*`` bindings.

The repository's own recordings under ``tests/fixtures/msp`` are always checked; a larger
collection is checked too when one is at hand (``MUSE_ACP_MSP_CAPTURES``, else ``msp-captures``
under ``reference`` in the ``shared`` folder beside the repository). Two formats are
read: ``latekaapi-baaz/*.jsonl`` raw logs (``--> `` client frame, ``<-- `` host line, ``#``
comment) and ``official-transcripts/<scenario>/transcript.ndjson`` (one
``{"dir": "client"|"server", "raw": "<line>"}`` per line).

Each capture is checked with the bindings of its host version, or the nearest one available:
every frame is a JSON-RPC message; every covered request, notification and host request parses
into its params model and every answer to a covered request into its result model; every error
carries ErrorData; and every item in covered events, histories and pages keeps the class of its
kind (unknown kinds become UnknownItem). Methods the bindings do not cover are printed.

Two checks pin the ends of the range: the official transcripts, which follow the SDK's current
schema, must also parse with the newest bindings (the ones the adapter parses every host with),
and the real 1.1.1 host logs must keep parsing with the 1.1.1 bindings.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

import pytest
from pydantic import BaseModel

from muse_acp_wire import (
    msp_1_1_1 as v111,
    msp_1_2_1 as v121,
    msp_1_3_0 as v130,
    msp_vocabulary as voc,
)
from muse_acp_wire._base import NotificationSpec, RequestSpec, WireModel

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
FIXTURES: Final = REPO_ROOT / "tests" / "fixtures" / "msp"
CAPTURES_ENV: Final = "MUSE_ACP_MSP_CAPTURES"
DEFAULT_CAPTURES: Final = REPO_ROOT.parent / "shared" / "reference" / "msp-captures"

# Other folders hold other formats (excerpts, projections) that these checks do not read.
RAW_LOG_FOLDER: Final = "latekaapi-baaz"
TRANSCRIPT_FOLDER: Final = "official-transcripts"

# Host lines can reach the 10 MiB frame limit; anything longer is a broken capture.
MAX_LINE_CHARS: Final = 16 * 1024 * 1024

Direction = Literal["client", "host"]


@dataclass(frozen=True, slots=True)
class Bindings:
    """One generated MSP module, spelled out so the checks never look names up by string."""

    version: tuple[int, int, int]
    host_requests: Mapping[str, RequestSpec]
    host_notifications: Mapping[str, NotificationSpec]
    client_requests: Mapping[str, RequestSpec]
    client_notifications: Mapping[str, NotificationSpec]
    message: type[BaseModel]
    error_data: type[WireModel]
    parse_item: Callable[[Any], WireModel]
    unknown_item: type[WireModel]
    item_classes: Mapping[str, type[WireModel]]

    @property
    def label(self) -> str:
        return ".".join(map(str, self.version))

    def requests(self, sender: Direction) -> Mapping[str, RequestSpec]:
        return self.host_requests if sender == "client" else self.client_requests

    def notifications(self, sender: Direction) -> Mapping[str, NotificationSpec]:
        return self.host_notifications if sender == "client" else self.client_notifications


BINDINGS: Final = (
    Bindings(
        version=(1, 1, 1),
        host_requests=v111.HOST_REQUESTS,
        host_notifications=v111.HOST_NOTIFICATIONS,
        client_requests=v111.CLIENT_REQUESTS,
        client_notifications=v111.CLIENT_NOTIFICATIONS,
        message=v111.JsonRpcMessage,
        error_data=v111.ErrorData,
        parse_item=lambda raw: (
            v111.ItemEventParams.model_validate(
                {"sessionId": "", "viewCursor": "", "item": raw}
            ).item
        ),
        unknown_item=v111.UnknownItem,
        item_classes=MappingProxyType(
            {
                "userMessage": v111.UserMessageItem,
                "agentMessage": v111.AgentMessageItem,
                "reasoning": v111.ReasoningItem,
                "toolCall": v111.ToolCallItem,
                "userShell": v111.UserShellItem,
                "workflow": v111.WorkflowItem,
                "subagent": v111.SubagentItem,
                "compaction": v111.CompactionItem,
            }
        ),
    ),
    Bindings(
        version=(1, 2, 1),
        host_requests=v121.HOST_REQUESTS,
        host_notifications=v121.HOST_NOTIFICATIONS,
        client_requests=v121.CLIENT_REQUESTS,
        client_notifications=v121.CLIENT_NOTIFICATIONS,
        message=v121.JsonRpcMessage,
        error_data=v121.ErrorData,
        parse_item=lambda raw: (
            v121.ItemEventParams.model_validate(
                {"sessionId": "", "viewCursor": "", "item": raw}
            ).item
        ),
        unknown_item=v121.UnknownItem,
        item_classes=MappingProxyType(
            {
                "userMessage": v121.UserMessageItem,
                "agentMessage": v121.AgentMessageItem,
                "reasoning": v121.ReasoningItem,
                "toolCall": v121.ToolCallItem,
                "userShell": v121.UserShellItem,
                "workflow": v121.WorkflowItem,
                "subagent": v121.SubagentItem,
                "compaction": v121.CompactionItem,
            }
        ),
    ),
    # Muse's own 1.3.0 declarations: one Item object for every kind, so each item is checked
    # against it; the envelope is JSON-RPC's, read with the vocabulary.
    Bindings(
        version=(1, 3, 0),
        host_requests=v130.HOST_REQUESTS,
        host_notifications=v130.HOST_NOTIFICATIONS,
        client_requests=v130.CLIENT_REQUESTS,
        client_notifications=v130.CLIENT_NOTIFICATIONS,
        message=voc.JsonRpcMessage,
        error_data=v130.ErrorData,
        parse_item=v130.Item.model_validate,
        unknown_item=v130.Item,
        item_classes=MappingProxyType({}),
    ),
    Bindings(
        version=(1, 4, 2),
        host_requests=voc.HOST_REQUESTS,
        host_notifications=voc.HOST_NOTIFICATIONS,
        client_requests=voc.CLIENT_REQUESTS,
        client_notifications=voc.CLIENT_NOTIFICATIONS,
        message=voc.JsonRpcMessage,
        error_data=voc.ErrorData,
        parse_item=lambda raw: (
            voc.ItemEventParams.model_validate(
                {"sessionId": "", "viewCursor": "", "item": raw}
            ).item
        ),
        unknown_item=voc.UnknownItem,
        item_classes=MappingProxyType(
            {
                "userMessage": voc.UserMessageItem,
                "agentMessage": voc.AgentMessageItem,
                "reasoning": voc.ReasoningItem,
                "toolCall": voc.ToolCallItem,
                "userShell": voc.UserShellItem,
                "workflow": voc.WorkflowItem,
                "subagent": voc.SubagentItem,
                "compaction": voc.CompactionItem,
            }
        ),
    ),
)

NEWEST: Final = max(BINDINGS, key=lambda b: b.version)
"""The bindings the adapter parses every host with; the official transcripts follow them."""


def bindings_for(version: tuple[int, int, int]) -> Bindings:
    """The bindings of this host version, else the newest older one, else the oldest we have."""
    older = [b for b in BINDINGS if b.version <= version]
    return max(older, key=lambda b: b.version) if older else min(BINDINGS, key=lambda b: b.version)


@dataclass(frozen=True, slots=True)
class Frame:
    sender: Direction
    line: int
    raw: str


@dataclass(frozen=True, slots=True)
class Capture:
    name: str
    frames: tuple[Frame, ...]


def captures_dir() -> Path:
    configured = os.environ.get(CAPTURES_ENV)
    return Path(configured) if configured else DEFAULT_CAPTURES


def capture_paths() -> list[Path]:
    """The repository's recordings, then those of the collection at hand, if any."""
    own = sorted(
        [*FIXTURES.glob("raw-logs/*.jsonl"), *FIXTURES.glob("transcripts/*/transcript.ndjson")]
    )
    root = captures_dir()
    if not root.is_dir():
        return own
    raw_logs = root.glob(f"{RAW_LOG_FOLDER}/*.jsonl")
    return own + sorted([*raw_logs, *root.glob(f"{TRANSCRIPT_FOLDER}/*/transcript.ndjson")])


def capture_name(path: Path) -> str:
    if path.is_relative_to(FIXTURES):
        return f"own/{path.relative_to(FIXTURES)}"
    return str(path.relative_to(captures_dir()))


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", newline="\n") as lines:
        for number, line in enumerate(lines, start=1):
            assert len(line) <= MAX_LINE_CHARS, f"{path.name}:{number} is implausibly long"
            yield number, line.rstrip("\n")


def read_capture(path: Path) -> Capture:
    frames: list[Frame] = []
    if path.name == "transcript.ndjson":
        for number, line in _read_lines(path):
            if not line.strip():
                continue
            record = json.loads(line)
            assert record["dir"] in ("client", "server"), f"line {number}: unknown dir"
            sender: Direction = "client" if record["dir"] == "client" else "host"
            frames.append(Frame(sender, number, record["raw"]))
    else:
        for number, line in _read_lines(path):
            if not line.strip() or line.startswith("#"):
                continue
            prefix, _, raw = line.partition(" ")
            assert prefix in ("-->", "<--"), f"line {number}: neither a frame nor a comment"
            frames.append(Frame("client" if prefix == "-->" else "host", number, raw))
    return Capture(capture_name(path), tuple(frames))


_VERSION_IN_NAME: Final = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def host_version(capture: Capture, path: Path) -> tuple[int, int, int]:
    """The serverInfo.version the host reported, else the version in the file name, else 0.0.0."""
    for frame in capture.frames:
        if frame.sender != "host":
            continue
        result = json.loads(frame.raw).get("result")
        version = result.get("serverInfo", {}).get("version") if isinstance(result, dict) else None
        if isinstance(version, str):
            return _parse_version(version)
    return _parse_version(path.name)


def _parse_version(text: str) -> tuple[int, int, int]:
    found = _VERSION_IN_NAME.search(text)
    if found is None:
        return (0, 0, 0)
    major, minor, patch = (int(part) for part in found.groups())
    return (major, minor, patch)


@dataclass(slots=True)
class Report:
    """What one capture exercised, so a capture that checks nothing cannot pass unnoticed."""

    covered: int = 0
    """Params, results, page events and items parsed into their own models."""
    uncovered: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    """Requests whose params the host rejected as invalid; their params are not checked."""


@dataclass(frozen=True, slots=True)
class Pending:
    method: str
    params: Any
    spec: RequestSpec | None
    where: str


def _raw_items(payload: Any) -> list[Any]:
    """Items inside an already validated item event, history-bearing result or snapshot."""
    if not isinstance(payload, dict):
        return []
    items: list[Any] = [payload["item"]] if isinstance(payload.get("item"), dict) else []
    history = payload.get("history")
    if isinstance(history, dict):
        items.extend(history.get("items") or [])
        snapshot = history.get("snapshot")
        if isinstance(snapshot, dict):
            items.extend(snapshot["state"]["items"])
    return items


def _check_payload(
    spec_params: type[WireModel], payload: Any, bindings: Bindings, where: str, report: Report
) -> None:
    """Parse params or a result, then every item it carries and every event of a page."""
    spec_params.model_validate(payload)
    report.covered += 1
    for item in _raw_items(payload):
        expected = bindings.item_classes.get(item["kind"], bindings.unknown_item)
        actual = type(bindings.parse_item(item))
        assert actual is expected, (
            f"{where}: a {item['kind']!r} item parsed as {actual.__name__}, not "
            f"{expected.__name__}; a member the schema requires is missing or mistyped"
        )
        report.covered += 1
    events = payload.get("events") if isinstance(payload, dict) else None
    for index, event in enumerate(events if isinstance(events, list) else []):
        note = bindings.client_notifications.get(event["method"])
        if note is None:
            report.uncovered.add(event["method"])
        elif note.params is not None:
            _check_payload(note.params, event["params"], bindings, f"{where} event {index}", report)


def _check_params(pending: Pending, bindings: Bindings, report: Report) -> None:
    if pending.spec is not None and pending.spec.params is not None:
        _check_payload(pending.spec.params, pending.params, bindings, pending.where, report)


def check_capture(capture: Capture, bindings: Bindings) -> Report:
    report = Report()
    awaiting: dict[tuple[Direction, str], Pending] = {}
    for frame in capture.frames:
        where = f"{capture.name}:{frame.line}"
        message = json.loads(frame.raw)
        assert isinstance(message, dict), f"{where}: a frame must be a JSON object"
        bindings.message.model_validate(message)
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            spec = bindings.requests(frame.sender).get(method)
            if spec is None:
                report.uncovered.add(method)
            key = (frame.sender, json.dumps(message["id"]))
            params = message.get("params", {})
            awaiting[key] = Pending(method, params, spec, f"{where} {method}")
        elif isinstance(method, str):
            note = bindings.notifications(frame.sender).get(method)
            if note is None:
                report.uncovered.add(method)
            elif note.params is not None:
                params = message.get("params", {})
                _check_payload(note.params, params, bindings, f"{where} {method}", report)
        else:
            error = message.get("error")
            # Hosts always explain an error in data; a client's reply to a host request may not.
            if isinstance(error, dict) and (frame.sender == "host" or "data" in error):
                bindings.error_data.model_validate(error.get("data"))
            requester: Direction = "host" if frame.sender == "client" else "client"
            pending = awaiting.pop((requester, json.dumps(message.get("id"))), None)
            if pending is None:
                continue
            # Params the host refused as invalid were probes of its validation, not evidence
            # of a shape it accepts, so they are not held to the schema.
            refused = isinstance(error, dict) and error.get("code") == -32602
            if refused:
                report.refused.add(pending.method)
            else:
                _check_params(pending, bindings, report)
            if pending.spec is not None and "result" in message:
                result = message["result"]
                _check_payload(pending.spec.result, result, bindings, pending.where, report)
    for pending in awaiting.values():
        _check_params(pending, bindings, report)
    return report


@pytest.mark.parametrize("path", [pytest.param(p, id=capture_name(p)) for p in capture_paths()])
def test_capture_parses_with_the_bindings_of_its_host_version(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = read_capture(path)
    assert capture.frames, f"{capture.name} holds no frames"
    bindings = bindings_for(host_version(capture, path))
    report = check_capture(capture, bindings)
    assert report.covered > 0, f"{capture.name} has no message the bindings cover"
    notes = []
    if report.uncovered:
        notes.append("not covered: " + ", ".join(sorted(report.uncovered)))
    if report.refused:
        notes.append(
            "params refused by the host, not checked: " + ", ".join(sorted(report.refused))
        )
    if notes:
        with capsys.disabled():
            print(f"\n{capture.name} (msp {bindings.label} bindings): " + "; ".join(notes))


def test_nearest_bindings_are_chosen_for_unlisted_host_versions() -> None:
    versions = [
        (0, 0, 0),
        (1, 0, 3),
        (1, 1, 1),
        (1, 2, 1),
        (1, 3, 0),
        (1, 4, 0),
        (1, 4, 2),
        (1, 4, 14),
    ]
    labels = {v: bindings_for(v).label for v in versions}
    assert labels == {
        (0, 0, 0): "1.1.1",
        (1, 0, 3): "1.1.1",
        (1, 1, 1): "1.1.1",
        (1, 2, 1): "1.2.1",
        (1, 3, 0): "1.3.0",
        (1, 4, 0): "1.3.0",
        (1, 4, 2): "1.4.2",
        (1, 4, 14): "1.4.2",
    }
    assert NEWEST.label == "1.4.2"


def test_the_repository_ships_recordings_of_both_formats_and_both_versions() -> None:
    own = [path for path in capture_paths() if path.is_relative_to(FIXTURES)]
    assert {path.suffix for path in own} == {".jsonl", ".ndjson"}
    versions = {host_version(read_capture(path), path) for path in own}
    assert {(1, 1, 1), (1, 2, 1)} <= versions


def _case_id(path: Path) -> str:
    return capture_name(path)


_PATHS: Final = capture_paths()
_TRANSCRIPTS: Final = [p for p in _PATHS if p.suffix == ".ndjson"]
_REAL_1_1_1: Final = [
    p for p in _PATHS if p.suffix == ".jsonl" and host_version(read_capture(p), p) == (1, 1, 1)
]


@pytest.mark.parametrize("path", _TRANSCRIPTS, ids=_case_id)
def test_a_transcript_parses_with_the_newest_bindings(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The SDK's golden transcripts follow its current schema, and the adapter parses every host
    # with its newest bindings: every frame those bindings have a model for must fit it.
    capture = read_capture(path)
    report = check_capture(capture, NEWEST)
    assert report.covered > 0, f"{capture.name} has no message the newest bindings cover"
    if report.uncovered:
        with capsys.disabled():
            print(
                f"\n{capture.name} (msp {NEWEST.label} bindings): not covered: "
                + ", ".join(sorted(report.uncovered))
            )


@pytest.mark.parametrize("path", _REAL_1_1_1, ids=_case_id)
def test_a_1_1_1_host_log_still_parses_with_the_1_1_1_bindings(path: Path) -> None:
    capture = read_capture(path)
    assert host_version(capture, path) == (1, 1, 1)
    (bindings,) = (b for b in BINDINGS if b.version == (1, 1, 1))
    report = check_capture(capture, bindings)
    assert report.covered > 0, f"{capture.name} has no message the 1.1.1 bindings cover"
