"""The simulator against recorded host traffic (see ``fidelity`` for how frames are compared).

Each recording (``captures`` says where they are: the repository's own, and a larger collection
when one is at hand) is replayed from its client side: host logs against a 1.1.1 simulator (the
nearest simulated version to their 1.0.3 and 1.1.1 hosts), official-style transcripts against a
1.2.1 one. The test prints, per capture, what could not be reproduced and why, and fails on any
frame whose shape differs from the recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Final

import anyio
import pytest

from muse_acp.sim.options.accounts import CREDENTIALS_FILE
from muse_acp_wire import msp_1_1_1, msp_1_2_1

from .captures import (
    Recorded,
    connections,
    is_external,
    official_transcripts,
    raw_logs,
    read_raw_log,
    read_transcript,
)
from .fidelity import Replayer, Report
from .runs import sim_hosted
from .shapes import ids_in, kind_key

pytestmark = pytest.mark.anyio

PARALLEL: Final = 3

DIRECTIVES: Final[dict[str, dict[tuple[str, int], str]]] = {
    # The recorded model ran `ls` and then asked which file to describe.
    "transcript-real-1.0.3": {("turn/start", 0): "sim:bash 20\nsim:ask"},
    # The recorded turn was still running when it was queued behind, steered and interrupted.
    "transcript-wire-1.0.3": {("turn/start", 0): "sim:hold", ("turn/steer", 0): "sim:hold"},
    "approval-round-trip": {("turn/start", 0): "sim:approve touch Cargo.toml"},
}
"""Directives appended to recorded prompts, so that the fake model follows the recorded script."""

REPLACEMENTS: Final[dict[str, dict[tuple[str, int], tuple[tuple[str, str], ...]]]] = {
    "transcript-real-1.0.3": {
        ("userInput/answer", 0): (('"file_choice"', '"choice"'), ('"README.md"', '"alpha"')),
    },
}
"""Recorded answers to the recorded question, given as answers to the simulator's question."""

DIVERGENCES: Final[dict[str, dict[tuple[str, int], str]]] = {
    "transcript-wire-1.0.3": {
        ("turn/start", 2): "reasoning effort max exists from host 1.1.1; the capture is 1.0.3",
    },
    "pending-command-ack-reject": {
        ("turn/start", 2): "the recorded provider outage is not simulated",
    },
}
"""Answers that legitimately differ between the recorded host and the simulated version."""

STORED_KEY: Final = frozenset({"account-1.1.1", "transcript-account-1.1.1"})
"""Captures whose host had an API key stored; the simulator gets one stored too."""


def _plan(
    name: str, connection: list[Recorded], wire: ModuleType, replayed: dict[tuple[str, ...], str]
) -> str | None:
    """Why this connection is not replayed, or None to replay it.

    A connection is left out when it works on a session the recording never created (its host
    had it from before), or when its requests the schema knows are exactly those of a connection
    replayed already (the simulator would answer them alike).
    """
    known: set[str] = set()
    signature: list[str] = []
    for index, frame in enumerate(connection):
        message = frame.message
        if frame.direction == "server":
            known |= ids_in(message)
            continue
        method = message.get("method")
        params = message.get("params") or {}
        if method == "session/start" and "sessionId" in params:
            known.add(params["sessionId"])
        session_id = params.get("sessionId")
        answered = next(
            (
                f.message
                for f in connection[index + 1 :]
                if f.message.get("id") == message.get("id")
                and "method" not in f.message
                and f.direction == "server"
            ),
            None,
        )
        if session_id is not None and session_id not in known and answered and "result" in answered:
            return f"{method} works on a session from before the recording"
        if isinstance(method, str) and method in wire.HOST_REQUESTS and "id" in message:
            signature.append(method)
    key = tuple(signature)
    if name in DIRECTIVES or name in DIVERGENCES or key not in replayed:
        replayed.setdefault(key, name)
        return None
    return f"same requests as {replayed[key]}"


def _library(frames: list[Recorded]) -> dict[str, Recorded]:
    library: dict[str, Recorded] = {}
    for frame in frames:
        if frame.direction == "server" and "method" in frame.message:
            library.setdefault(kind_key(frame.message), frame)
    return library


async def _replay_connection(
    tmp_path: Path,
    report: Report,
    connection: list[Recorded],
    *,
    version: str,
    wire: ModuleType,
    ordered: bool,
    library: dict[str, Recorded],
) -> None:
    name = report.name.partition("#")[0]
    home = tmp_path / report.name
    if name in STORED_KEY:
        home.mkdir(parents=True, exist_ok=True)
        (home / CREDENTIALS_FILE).write_text(json.dumps({"state": "apiKey"}), encoding="utf-8")
    async with sim_hosted(home, version=version) as sim:
        replayer = Replayer(
            report,
            connection,
            sim,
            wire,
            ordered=ordered,
            library=library,
            directives=DIRECTIVES.get(name, {}),
            replacements=REPLACEMENTS.get(name, {}),
            divergences=DIVERGENCES.get(name, {}),
        )
        await replayer.run()


def _print(reports: list[Report]) -> None:
    for report in reports:
        print(f"\n[{report.name}] {report.checked} simulator frames checked")
        if report.unsupported:
            print(f"  methods the simulator does not serve: {sorted(report.unsupported)}")
        for skipped in report.skipped:
            print(f"  not reproduced: {skipped}")
        for divergence in report.divergences:
            print(f"  known divergence: {divergence}")
        if report.unverified:
            print(f"  no recorded counterpart: {sorted(report.unverified)}")
        for failure in report.failures:
            print(f"  FAILED {failure}")


async def _replay_all(
    tmp_path: Path,
    captures: dict[str, list[Recorded]],
    version: str,
    wire: ModuleType,
    ordered: bool,
) -> list[Report]:
    library: dict[str, Recorded] = {}
    for frames in captures.values():
        for key, frame in _library(frames).items():
            library.setdefault(key, frame)
    reports: list[Report] = []
    planned: list[tuple[Report, list[Recorded]]] = []
    replayed: dict[tuple[str, ...], str] = {}
    for name, frames in sorted(captures.items()):
        for number, connection in enumerate(connections(frames)):
            report = Report(f"{name}#{number}" if number else name)
            reports.append(report)
            reason = _plan(name, connection, wire, replayed)
            if reason is None:
                planned.append((report, connection))
            else:
                report.skipped.append(f"whole capture: {reason}")
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(report: Report, connection: list[Recorded]) -> None:
        async with limiter:
            await _replay_connection(
                tmp_path,
                report,
                connection,
                version=version,
                wire=wire,
                ordered=ordered,
                library=library,
            )

    async with anyio.create_task_group() as group:
        for report, connection in planned:
            group.start_soon(one, report, connection)
    return reports


async def test_the_simulator_answers_real_host_traffic_in_its_shapes(tmp_path: Path) -> None:
    logs = raw_logs()
    captures = {name: read_raw_log(path) for name, path in logs.items()}
    reports = await _replay_all(tmp_path, captures, "1.1.1", msp_1_1_1, ordered=True)
    _print(reports)
    assert [f for report in reports for f in report.failures] == []
    # The repository's own logs alone check a handful of frames; the full collection, many.
    minimum = 100 if any(map(is_external, logs.values())) else 5
    assert sum(report.checked for report in reports) > minimum


async def test_the_simulator_answers_official_transcripts_in_their_shapes(tmp_path: Path) -> None:
    transcripts = official_transcripts()
    captures = {name: read_transcript(path) for name, path in transcripts.items()}
    reports = await _replay_all(tmp_path, captures, "1.2.1", msp_1_2_1, ordered=False)
    _print(reports)
    assert [f for report in reports for f in report.failures] == []
    assert sum(report.checked for report in reports) > 5
