"""The exec backend's pure parts: choosing it, what it advertises, its prompt, flags and images."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.handshake.capabilities import (
    Negotiated,
    initialize_response,
    negotiate,
    not_on_exec,
)
from muse_acp.agent.hosting.exec_runs import exec_run
from muse_acp.agent.options.config_options import ModelChoice, SessionSettings
from muse_acp.agent.prompts.exec_turn import (
    MAX_LINE_BYTES,
    MAX_PROMPT_BYTES,
    ExecTurn,
    exec_flags,
    split_prompt,
)
from muse_acp.agent.translation.translate import Update
from muse_acp.config import ConfigError, check_backend, load_config
from muse_acp.host.backends import decide
from muse_acp.host.binary import EXEC_FLAGS, HostUnavailable, MuseBinary
from muse_acp.host.features import features_of
from muse_acp.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from muse_acp_wire import acp, msp

PNG = base64.b64encode(b"\x89PNG-bytes").decode()


def binary(*, serves: bool, exec_flags: tuple[str, ...] | None = EXEC_FLAGS) -> MuseBinary:
    return MuseBinary(
        path="/opt/muse",
        version="1.2.1" if serves else "0.2.1",
        version_text="muse",
        serves=serves,
        serve_flags=frozenset(),
        exec_flags=None if exec_flags is None else frozenset(exec_flags),
    )


# -- the setting and the choice -------------------------------------------------------------


@pytest.mark.parametrize(("raw", "value"), [("exec", "exec"), (" MSP ", "msp"), ("Auto", "auto")])
def test_backend_settings_are_read_in_any_case(raw: str, value: str) -> None:
    assert check_backend(raw, "--backend") == value


def test_an_unknown_backend_names_its_source_and_what_is_accepted() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config({"MUSE_ACP_BACKEND": "sdk"})
    assert str(refused.value).startswith("MUSE_ACP_BACKEND must be auto, msp or exec")
    assert "got 'sdk'" in str(refused.value)
    with pytest.raises(ConfigError, match=r"^--backend must be"):
        load_config({"MUSE_ACP_BACKEND": "exec"}, backend="serve")
    assert load_config({}).backend == "auto"
    assert load_config({"MUSE_ACP_BACKEND": "exec"}).backend == "exec"
    assert load_config({"MUSE_ACP_BACKEND": "exec"}, backend="msp").backend == "msp"


def test_auto_prefers_msp_then_exec() -> None:
    assert decide("auto", binary(serves=True)).kind == "msp"
    choice = decide("auto", binary(serves=False))
    assert choice.kind == "exec"
    assert choice.exec
    assert choice.reason == (
        "Muse 0.2.1 has no `serve` (added in Muse 1.1.1), so the legacy `muse exec --json` is used"
    )
    with pytest.raises(HostUnavailable, match="neither `serve` nor `exec --json`"):
        decide("auto", binary(serves=False, exec_flags=()))


def test_a_chosen_backend_is_obeyed_and_never_swapped() -> None:
    assert decide("exec", binary(serves=True)).reason == (
        "exec was chosen with --backend or MUSE_ACP_BACKEND"
    )
    with pytest.raises(HostUnavailable, match="does not support `serve`"):
        decide("msp", binary(serves=False))
    with pytest.raises(HostUnavailable, match="does not support `exec --json`"):
        decide("exec", binary(serves=True, exec_flags=("--image",)))


# -- what is advertised ---------------------------------------------------------------------

EXEC_REPORT = acp.MuseBackendReport(backend="exec", reason="chosen")
ALL_OPT_INS = {"muse/output": 1, "muse/steering": 1, "steering": True}


def request(meta: dict[str, Any]) -> acp.InitializeRequest:
    return acp.InitializeRequest.model_validate(
        {"protocolVersion": 1, "clientCapabilities": {"_meta": meta}}
    )


def test_exec_negotiates_no_extension_whatever_is_asked() -> None:
    negotiated = negotiate(
        request(ALL_OPT_INS), features_of("1.2.1", trust_newer=False), EXEC_REPORT
    )
    assert negotiated == Negotiated(exec_backend=True)
    on_msp = negotiate(
        request(ALL_OPT_INS),
        features_of("1.2.1", trust_newer=False),
        acp.MuseBackendReport(backend="msp", reason="x"),
    )
    assert on_msp.output
    assert on_msp.steering
    assert on_msp.compatible_steering


def test_exec_advertises_new_and_close_only_and_says_which_backend() -> None:
    dumped = initialize_response(Negotiated(exec_backend=True), EXEC_REPORT).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    capabilities = dumped["agentCapabilities"]
    assert capabilities["loadSession"] is False
    assert capabilities["sessionCapabilities"] == {"close": {}}
    assert capabilities["promptCapabilities"]["image"] is True
    assert dumped["_meta"] == {"muse/backend": {"backend": "exec", "reason": "chosen"}}
    msp_report = acp.MuseBackendReport(backend="msp", reason="default")
    on_msp = initialize_response(Negotiated(delete=True), msp_report).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    assert set(on_msp["agentCapabilities"]["sessionCapabilities"]) == {
        "list",
        "resume",
        "close",
        "fork",
        "delete",
    }
    assert on_msp["_meta"] == {"muse/backend": {"backend": "msp", "reason": "default"}}


def test_unadvertised_session_methods_are_refused_as_not_found() -> None:
    refused = not_on_exec("session/load")
    assert refused.code == METHOD_NOT_FOUND
    assert refused.message.startswith("session/load is not available on the legacy exec backend")


# -- the prompt, the flags and the images -------------------------------------------------------


def text(value: str) -> msp.TextTurnInputPart:
    return msp.TextTurnInputPart(type="text", text=value)


def image(data: str = PNG, media_type: str = "image/png") -> msp.ImageTurnInputPart:
    return msp.ImageTurnInputPart(type="image", base64_data=data, media_type=media_type)


def test_text_parts_are_joined_in_order_and_images_kept_apart() -> None:
    first, second = image(), image(media_type="image/gif")
    prompt, images = split_prompt([text("one"), first, text("two"), second])
    assert prompt == "one\n\ntwo"
    assert images == [first, second]


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ([image()], "needs some text"),
        ([text("  "), image()], "needs some text"),
        ([text("x" * (MAX_PROMPT_BYTES + 1))], "too long for the exec backend"),
        ([text("a\0b")], "without NUL"),
    ],
)
def test_prompts_exec_cannot_take_are_refused(parts: list[msp.TurnInputPart], words: str) -> None:
    with pytest.raises(RpcError) as refused:
        split_prompt(parts)
    assert refused.value.code == INVALID_PARAMS
    assert words in refused.value.message


@pytest.mark.parametrize(
    ("settings", "flags"),
    [
        (SessionSettings(), ("--json",)),
        (SessionSettings(mode_id="autoReject"), ("--json",)),
        (SessionSettings(mode_id="readOnly"), ("--json", "--disable-write", "--disable-shell")),
        (SessionSettings(mode_id="autoApprove"), ("--json", "--disable-approval")),
        (
            SessionSettings(model=ModelChoice("muse-spark", "meta"), effort="low"),
            ("--json", "--model", "muse-spark", "--reasoning-effort", "low"),
        ),
    ],
)
def test_flags_follow_the_session_settings(
    settings: SessionSettings, flags: tuple[str, ...]
) -> None:
    assert exec_flags(settings, binary(serves=False)) == flags


def test_a_flag_the_host_does_not_offer_is_refused_not_dropped() -> None:
    old = binary(serves=False, exec_flags=("--json", "--image"))
    with pytest.raises(HostUnavailable) as refused:
        exec_flags(SessionSettings(mode_id="autoApprove"), old)
    assert "`exec --disable-approval`" in refused.value.message
    assert "Auto-approve mode" in refused.value.message
    with pytest.raises(HostUnavailable, match="reasoning effort"):
        exec_flags(SessionSettings(effort="high"), old)


@pytest.mark.anyio
async def test_images_are_staged_privately_in_order_and_removed(tmp_path: Path) -> None:
    parts = [image(), image(base64.b64encode(b"GIF89a").decode(), "image/gif")]
    async with exec_run(tmp_path, parts) as run:
        paths = run.images
        folder = Path(paths[0]).parent
        assert folder.parent == tmp_path / "run" / "exec-runs"
        assert [Path(p).name for p in paths] == ["image-01.png", "image-02.gif"]
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert [stat.S_IMODE(os.stat(p).st_mode) for p in paths] == [0o600, 0o600]
        assert await anyio.Path(paths[1]).read_bytes() == b"GIF89a"
    assert not folder.exists()


@pytest.mark.anyio
async def test_staged_images_are_removed_when_the_turn_fails_or_is_cancelled(
    tmp_path: Path,
) -> None:
    seen: list[Path] = []

    async def fail() -> None:
        async with exec_run(tmp_path, [image()]) as run:
            seen.append(run.folder)
            raise RuntimeError("the turn failed")

    with pytest.raises(RuntimeError):
        await fail()
    assert not seen[0].exists()
    with anyio.CancelScope() as scope:
        async with exec_run(tmp_path, [image()]) as run:
            cancelled = run.folder
            scope.cancel()
            await anyio.sleep_forever()
    assert not cancelled.exists()
    async with exec_run(tmp_path, []) as none:
        assert none.images == []
        assert none.folder.is_dir()
    assert not none.folder.exists()


# -- one run, against small scripts in place of Muse --------------------------------------------


class RecordingSession:
    def __init__(self, cwd: Path) -> None:
        self.session_id = "exec-session"
        self.cwd = str(cwd)
        self.updates: list[acp.SessionUpdate] = []
        self.notices: list[Notice] = []

    @property
    def outlet(self) -> RecordingSession:
        return self

    async def tell(self, notice: Notice) -> None:
        self.notices.append(notice)

    @property
    def takes_children(self) -> bool:
        return False

    def send_nowait(self, update: Update, *, now: bool = False, hand_over: bool = False) -> bool:
        return False

    async def send_unless_gone(
        self, update: Update, write: Callable[[Awaitable[None]], Awaitable[None]] | None = None
    ) -> bool:
        assert isinstance(update, acp.SessionUpdate)
        assert write is None
        self.updates.append(update)
        return False


def script(tmp_path: Path, body: str) -> MuseBinary:
    path = tmp_path / "muse"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return MuseBinary(
        path=str(path),
        version="0.2.1",
        version_text="muse 0.2.1",
        serves=False,
        serve_flags=frozenset(),
        exec_flags=frozenset(EXEC_FLAGS),
    )


DELTA = '{"schema_version":1,"payload_type":"run.output.delta","payload":{"text":"hi"}}'


async def run_turn(
    tmp_path: Path, body: str, flags: tuple[str, ...] = ("--json",), *, cancel: bool = False
) -> tuple[acp.StopReason | RpcError, RecordingSession]:
    session = RecordingSession(tmp_path)
    turn = ExecTurn(session, script(tmp_path, body), flags, cancel_budget=2.0, environ=os.environ)
    if cancel:
        turn.request_cancel()
    with anyio.fail_after(20):
        try:
            return await turn.run("the prompt", []), session
        except RpcError as error:
            return error, session


@pytest.mark.anyio
async def test_unreadable_lines_are_skipped_and_the_rest_relayed(tmp_path: Path) -> None:
    outcome, session = await run_turn(tmp_path, f"echo 'not json'\necho '{DELTA}'\nexit 0")
    assert outcome == "end_turn"
    assert [u.session_update for u in session.updates] == ["agent_message_chunk"]
    # Told once, after the run: logged only for a plain client, a notice for one that opted in.
    [notice] = session.notices
    assert (notice.severity, notice.chat) == ("warning", False)
    assert "wrote 1 line(s) of output muse-acp could not read" in notice.text


@pytest.mark.anyio
async def test_a_refused_invocation_names_the_flags(tmp_path: Path) -> None:
    body = "echo \"error: unexpected argument '--disable-approval'\" >&2\nexit 2"
    outcome, _ = await run_turn(tmp_path, body, ("--json", "--disable-approval"))
    assert isinstance(outcome, RpcError)
    assert "--json --disable-approval" in outcome.message
    assert "unexpected argument" in outcome.message


@pytest.mark.anyio
async def test_output_of_another_version_stops_the_run(tmp_path: Path) -> None:
    line = '{"schema_version":2,"payload_type":"run.output.delta","payload":{}}'
    outcome, _ = await run_turn(tmp_path, f"echo '{line}'\nexec sleep 30")
    assert isinstance(outcome, RpcError)
    assert "envelope version 2" in outcome.message


@pytest.mark.anyio
async def test_an_endless_line_stops_the_run(tmp_path: Path) -> None:
    body = f"head -c {MAX_LINE_BYTES + 70000} /dev/zero | tr '\\0' 'a'\nexec sleep 30"
    outcome, _ = await run_turn(tmp_path, body)
    assert isinstance(outcome, RpcError)
    assert f"longer than {MAX_LINE_BYTES} bytes" in outcome.message


@pytest.mark.anyio
async def test_a_cancel_before_the_run_stops_it_at_once(tmp_path: Path) -> None:
    outcome, session = await run_turn(tmp_path, f"echo '{DELTA}'\nexec sleep 30", cancel=True)
    assert outcome == "cancelled"
    assert session.updates == [], "a stopped run's output is not relayed"
