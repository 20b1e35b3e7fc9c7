"""Local commands: which prompts are commands, what each command does, and what it never does."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import pytest

from muse_acp.agent.commands import commands
from muse_acp.agent.commands.commands import (
    BUILTINS,
    CommandInvocation,
    available_commands,
    recognise,
    refusal,
)
from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting import skills
from muse_acp.agent.hosting.skills import (
    MAX_SKILLS_SHOWN,
    Skill,
    SkillsCatalog,
    SkillsUnavailable,
    list_skills,
    parse_skills,
    skills_reply,
)
from muse_acp.agent.hosting.starting import Hosting
from muse_acp.agent.options.config_options import ModelCatalog, ModelChoice, SessionSettings
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.config import AdapterConfig, Deadlines
from muse_acp.host.binary import HostUnavailable, MuseBinary
from muse_acp.host.client import MspHost
from muse_acp.rpc.errors import INVALID_PARAMS, ConnectionClosed, RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

from .fakes import RecordingClient

pytestmark = pytest.mark.anyio

R = TypeVar("R", bound=WireModel)
WAIT = 5.0
"""Upper bound on any wait in these tests."""

MODELS = {
    "models": [
        {
            "modelId": model_id,
            "displayLabel": model_id,
            "providerId": "meta",
            "profileId": None,
            "releaseDate": None,
            "description": None,
            "contextLimit": None,
            "outputLimit": None,
            "cost": None,
            "isActive": False,
            "isDefault": model_id == "spark-2",
        }
        for model_id in ("spark-1", "spark-2")
    ]
}
SKILLS = {
    "skills": [
        {
            "id": "bundled:plan",
            "description": "Plan first.",
            "scope": "bundled",
            "activation": "on",
        },
        {"id": "review", "description": "Review code.", "scope": "user", "activation": "on"},
        {"id": "dormant", "description": "Sleeps.", "scope": "workspace", "activation": "off"},
        {"id": "Rename", "description": "Collides.", "scope": "user", "activation": "on"},
    ]
}


def text(value: str) -> acp.ContentBlock:
    return acp.TextContentBlock(type="text", text=value)


def image() -> acp.ContentBlock:
    return acp.ImageContentBlock(type="image", data="iVBORw0KGgo=", mime_type="image/png")


def link() -> acp.ContentBlock:
    return acp.ResourceLinkContentBlock(type="resource_link", uri="file:///notes.md", name="n")


def embedded(value: str) -> acp.ContentBlock:
    return acp.ResourceContentBlock.model_validate(
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": value}}
    )


# ---------------------------------------------------------------------------- recognise


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ([text("/models")], CommandInvocation("models")),
        ([text("  /skills \n")], CommandInvocation("skills")),
        ([text("/logout")], CommandInvocation("logout")),
        ([text("/rename Release plan")], CommandInvocation("rename", "Release plan")),
        ([text("/rename   spaced   out  ")], CommandInvocation("rename", "spaced   out")),
        ([text("/rename")], CommandInvocation("rename")),
        ([text("/MODELS")], CommandInvocation("models")),
        ([text("/ReName Mixed Case")], CommandInvocation("rename", "Mixed Case")),
        ([text("/models now please")], CommandInvocation("models", "now please")),
        ([text("/skills\nand explain them")], CommandInvocation("skills", "and explain them")),
        ([text("/rename a\nb")], CommandInvocation("rename", "a\nb")),
        ([text("/models"), text("and then fix the bug")], CommandInvocation("models", alone=False)),
        ([text("/models"), image()], CommandInvocation("models", alone=False)),
        ([text("/rename T"), link()], CommandInvocation("rename", "T", alone=False)),
        ([image(), text("/logout")], CommandInvocation("logout", alone=False)),
        ([text("/skills"), embedded("notes")], CommandInvocation("skills", alone=False)),
    ],
)
def test_a_known_command_is_recognised(
    prompt: list[acp.ContentBlock], expected: CommandInvocation
) -> None:
    assert recognise(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    [
        [text("please run /models for me")],
        [text("what does /rename do?")],
        [text("/compactify")],
        [text("/goalkeeper save")],
        [text("/bundled:plan draft the release")],
        [text("/reviewer the diff")],
        [text("/models.")],
        [text("models")],
        [text("//models")],
        [text("/")],
        [text("")],
        [embedded("/models")],
        [image()],
        [text("fix the build"), text("/models")],
        [link(), embedded("/logout")],
        [],
    ],
)
def test_anything_else_is_ordinary_prompt_text(prompt: list[acp.ContentBlock]) -> None:
    assert recognise(prompt) is None


def test_an_invocation_must_name_a_built_in() -> None:
    with pytest.raises(ValueError, match="compactify"):
        CommandInvocation("compactify")


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        (CommandInvocation("models"), True),
        (CommandInvocation("skills"), True),
        (CommandInvocation("logout"), True),
        (CommandInvocation("rename", "Title"), True),
        (CommandInvocation("rename"), True),
        (CommandInvocation("models", "now"), False),
        (CommandInvocation("skills", "all"), False),
        (CommandInvocation("logout", "everywhere"), False),
        (CommandInvocation("models", alone=False), False),
        (CommandInvocation("rename", "Title", alone=False), False),
    ],
)
def test_extras_or_a_stray_argument_keep_a_command_from_running(
    command: CommandInvocation, runs: bool
) -> None:
    reply = refusal(command)
    assert (reply is None) == runs
    if reply is not None:
        assert f"/{command.name}" in reply
        assert "not run" in reply


# ---------------------------------------------------------------------------- fakes


def _muse_script(tmp_path: Path, body: str) -> MuseBinary:
    """A stand-in ``muse`` executable: a Python script running ``body`` with ``args`` set."""
    script = tmp_path / "fake-muse"
    script.write_text(f"#!{sys.executable}\nimport json, sys, time\nargs = sys.argv[1:]\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return MuseBinary(str(script), "1.2.1", "muse 1.2.1", True, frozenset())


def _skills_script(tmp_path: Path, document: object = SKILLS) -> MuseBinary:
    record = tmp_path / "argv.json"
    return _muse_script(
        tmp_path,
        f"open({str(record)!r}, 'w').write(json.dumps(args))\nprint({json.dumps(document)!r})",
    )


class FakeHost:
    """Answers ``model/list`` with a fixed result, an error, or not at all."""

    def __init__(self, answer: Mapping[str, Any] | RpcError | ConnectionClosed | None = MODELS):
        self.answer = answer
        self.calls: list[tuple[str, WireModel | None]] = []
        self.asked = anyio.Event()
        self.dead = anyio.Event()

    async def call(self, method: str, params: WireModel | None, result_type: type[R]) -> R:
        self.calls.append((method, params))
        self.asked.set()
        if self.answer is None:
            await anyio.Event().wait()
        if isinstance(self.answer, RpcError | ConnectionClosed):
            raise self.answer
        return result_type.model_validate(self.answer)

    async def ended(self) -> tuple[int | None, str]:
        return None, ""


class FakeHosting(Hosting):
    """Real hosting whose Muse executable is a stand-in (or missing)."""

    def __init__(self, config: AdapterConfig, binary: MuseBinary | None) -> None:
        super().__init__(config, {})
        self.binary = binary

    async def muse(self) -> MuseBinary:
        if self.binary is None:
            raise HostUnavailable("no Muse executable found in this test")
        return self.binary


class FakeContext(AgentContext):
    """A real context whose Muse executable and catalog host are stand-ins."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        binary: MuseBinary | None = None,
        host: FakeHost | None = None,
        environ: Mapping[str, str] | None = None,
        read: float = WAIT,
    ) -> None:
        config = AdapterConfig(data_dir=tmp_path / "data", deadlines=Deadlines(read=read))
        super().__init__(config, environ={} if environ is None else environ)
        self.hosting = FakeHosting(config, binary)
        self.skills = SkillsCatalog(self.hosting)
        self.host = host
        self.read_hosts = 0
        self.client = RecordingClient()

    @asynccontextmanager
    async def catalog_host(self, cwd: str) -> AsyncIterator[MspHost]:
        if self.host is None:
            await self.hosting.muse()  # a missing executable is found before any host starts
        assert self.host is not None, "this test expects no catalog host"
        self.read_hosts += 1
        # A stand-in for a host process: it answers calls as the test scripted them.
        yield cast(MspHost, self.host)

    @property
    def updates(self) -> list[acp.SessionUpdate]:
        return self.client.updates()

    def replies(self) -> list[str]:
        return [
            update.content.text
            for update in self.updates
            if isinstance(update, acp.AgentMessageChunkSessionUpdate)
            and isinstance(update.content, acp.TextContentBlock)
        ]

    def kinds(self) -> list[str]:
        return [update.session_update for update in self.updates]


SESSION_ID = "0190b5c2-7a1e-7c3d-9f00-000000000001"


def _session(ctx: FakeContext, tmp_path: Path, session_id: str = SESSION_ID) -> AcpSession:
    return ctx.sessions.add(AcpSession(session_id, str(tmp_path), ctx.client, ctx.hosting))


async def _run(
    ctx: FakeContext,
    session: AcpSession,
    prompt: Sequence[acp.ContentBlock],
    work: SessionWork | None = None,
) -> acp.StopReason:
    command = recognise(prompt)
    assert command is not None
    work = work or session.begin("a prompt")
    try:
        with anyio.fail_after(WAIT):
            return await commands.run(ctx, session, work, command)
    finally:
        session.end(work)


# ---------------------------------------------------------------------------- refusals


async def test_a_command_sent_with_an_attachment_only_replies(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/logout"), image()]) == "end_turn"
    assert ctx.kinds() == ["agent_message_chunk"]
    assert "/logout was not run" in ctx.replies()[0]
    assert not session.closed


async def test_an_argument_to_models_only_replies(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, host=FakeHost())
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models all of them")]) == "end_turn"
    assert ctx.read_hosts == 0
    assert ctx.catalog is None
    assert ctx.replies() == [
        "/models takes no argument, so it was not run. Send /models by itself."
    ]


# ---------------------------------------------------------------------------- /rename


async def test_rename_stores_the_title_and_announces_it(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/rename   User title 中文 ")]) == "end_turn"
    stored = ctx.preferences.load(session.session_id)
    assert stored.user_title == "User title 中文"
    assert session.user_title == "User title 中文"
    assert session.title == "User title 中文"
    info, reply = ctx.updates
    assert isinstance(info, acp.SessionInfoUpdateSessionUpdate)
    assert info.title == "User title 中文"
    assert info.updated_at == stored.title_updated_at
    assert isinstance(reply, acp.AgentMessageChunkSessionUpdate)
    assert "User title 中文" in ctx.replies()[0]


@pytest.mark.parametrize("argument", ["", " x" * 300, "two\nlines", "bell\x07"])
async def test_rename_with_an_unusable_title_is_invalid_params_and_changes_nothing(
    tmp_path: Path, argument: str
) -> None:
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    with pytest.raises(RpcError) as caught:
        await _run(ctx, session, [text(f"/rename {argument}")])
    assert caught.value.code == INVALID_PARAMS
    assert ctx.updates == []
    assert session.user_title is None
    assert not (tmp_path / "data").exists()


# ---------------------------------------------------------------------------- /models


async def test_models_reads_the_catalog_from_a_read_host_and_announces_the_new_menu(
    tmp_path: Path,
) -> None:
    host = FakeHost()
    ctx = FakeContext(tmp_path, host=host)
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert ctx.read_hosts == 1
    assert [(method, params) for method, params in host.calls] == [
        ("model/list", msp.ModelListParams())
    ]
    assert ctx.catalog is not None
    assert [entry.value for entry in ctx.catalog.entries] == ["spark-1", "spark-2"]
    assert ctx.kinds() == ["config_option_update", "agent_message_chunk"]
    update = ctx.updates[0]
    assert isinstance(update, acp.ConfigOptionUpdateSessionUpdate)
    model_option = update.config_options[1]
    assert isinstance(model_option, acp.SelectSessionConfigOption)
    values = [
        option.value
        for option in model_option.options
        if isinstance(option, acp.SessionConfigSelectOption)
    ]
    assert values == ["default", "spark-1", "spark-2"]
    assert "2 models" in ctx.replies()[0]


async def test_models_announces_nothing_when_the_menu_is_unchanged(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, host=FakeHost())
    ctx.catalog = ModelCatalog.from_result(msp.ModelListResult.model_validate(MODELS))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert ctx.kinds() == ["agent_message_chunk"]


async def test_models_reuses_the_sessions_running_host(tmp_path: Path) -> None:
    running = FakeHost()
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    # The session's execution host is running: the stand-in plays its process.
    session.execution.keeper._host = cast(MspHost, running)
    session.settings = SessionSettings(model=ModelChoice("spark-1", "meta"))
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert ctx.read_hosts == 0
    assert running.calls == [("model/list", msp.ModelListParams(session_id=session.session_id))]
    assert ctx.catalog is not None


async def test_models_with_no_models_listed_says_how_to_fix_it(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, host=FakeHost({"models": []}))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert "signed in" in ctx.replies()[0]


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (RpcError(-32603, "provider catalog unavailable"), "provider catalog unavailable"),
        (ConnectionClosed(), "exited"),
    ],
)
async def test_a_failed_models_refresh_is_told_in_the_reply(
    tmp_path: Path, failure: RpcError | ConnectionClosed, said: str
) -> None:
    ctx = FakeContext(tmp_path, host=FakeHost(failure))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert ctx.catalog is None
    assert ctx.kinds() == ["agent_message_chunk"]
    assert "not refreshed" in ctx.replies()[0]
    assert said in ctx.replies()[0]


async def test_a_missing_muse_is_told_in_the_models_reply(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert "no Muse executable found" in ctx.replies()[0]


async def test_a_models_refresh_is_bounded_by_the_read_budget(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, host=FakeHost(None), read=0.05)
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/models")]) == "end_turn"
    assert "took longer than 0.05 s" in ctx.replies()[0]


async def test_session_cancel_stops_a_models_refresh(tmp_path: Path) -> None:
    host = FakeHost(None)
    ctx = FakeContext(tmp_path, host=host)
    session = _session(ctx, tmp_path)
    work = session.begin("a prompt")
    outcome: list[acp.StopReason] = []

    async def refresh() -> None:
        outcome.append(await _run(ctx, session, [text("/models")], work))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(refresh)
            await host.asked.wait()
            session.cancel()
    assert outcome == ["cancelled"]
    assert session.work is None
    assert ctx.updates == []
    assert ctx.catalog is None


# ---------------------------------------------------------------------------- skills


def test_skills_are_parsed_and_their_text_bounded() -> None:
    raw = json.dumps(
        {
            "skills": [
                {"id": "a", "description": "x" * 500, "scope": "user", "activation": "on"},
                {"id": "b", "description": "two\n lines", "scope": 3},
                {"description": "no id"},
                {"id": "  "},
                "not an object",
            ]
        }
    ).encode()
    first, second = parse_skills(raw)
    assert first.id == "a"
    assert len(first.description) == skills.DESCRIPTION_LIMIT
    assert second == Skill("b", "two lines", "", "")


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"skills": {}}', b"\xff"])
def test_a_listing_that_is_not_a_skills_document_is_refused(raw: bytes) -> None:
    with pytest.raises(SkillsUnavailable):
        parse_skills(raw)


def test_the_skills_reply_lists_each_skill_with_activation_and_scope() -> None:
    reply = skills_reply(parse_skills(json.dumps(SKILLS).encode()))
    lines = reply.splitlines()
    assert len(lines) == 5
    assert lines[1] == "- bundled:plan (bundled; activation on): Plan first."
    assert lines[3] == "- dormant (workspace; activation off): Sleeps."


def test_the_skills_reply_shows_at_most_two_hundred_skills() -> None:
    many = [Skill(f"s{index}", "", "user", "on") for index in range(MAX_SKILLS_SHOWN + 5)]
    lines = skills_reply(many).splitlines()
    assert len(lines) == 1 + MAX_SKILLS_SHOWN + 1
    assert "5 more" in lines[-1]
    assert skills_reply([]) == "Muse reports no skills for this workspace."


async def test_skills_runs_the_muse_listing_for_the_session_workspace(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, binary=_skills_script(tmp_path))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/skills")]) == "end_turn"
    recorded = json.loads((tmp_path / "argv.json").read_text())
    assert recorded == ["skills", "list", "--json", "--workspace", str(tmp_path)]
    assert ctx.kinds() == ["agent_message_chunk"]
    assert "- review (user; activation on): Review code." in ctx.replies()[0]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("sys.exit(3)", "exited with status 3"),
        ("print('plain words')", "not JSON"),
        ("sys.stdout.write('x' * (2 * 1024 * 1024))", "exceeds"),
    ],
)
async def test_a_failed_skills_listing_is_told_in_the_reply(
    tmp_path: Path, body: str, said: str
) -> None:
    ctx = FakeContext(tmp_path, binary=_muse_script(tmp_path, body))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/skills")]) == "end_turn"
    assert "could not be listed" in ctx.replies()[0]
    assert said in ctx.replies()[0]


async def test_a_skills_listing_that_hangs_is_stopped_at_its_budget(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, binary=_muse_script(tmp_path, "time.sleep(60)"))
    with anyio.fail_after(WAIT), pytest.raises(SkillsUnavailable, match=r"0\.2 seconds"):
        await list_skills(ctx.hosting, str(tmp_path), budget=0.2)


async def test_a_missing_muse_makes_the_skills_listing_unavailable(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path)
    with anyio.fail_after(WAIT), pytest.raises(SkillsUnavailable, match="no Muse executable"):
        await list_skills(ctx.hosting, str(tmp_path))


# ---------------------------------------------------------------------------- /logout


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"META_API_KEY": "mk-test-0123456789"}, "META_API_KEY is still exported"),
        ({}, "No META_API_KEY is exported"),
    ],
)
async def test_logout_signs_out_closes_every_session_and_says_what_remains(
    tmp_path: Path, environ: dict[str, str], said: str
) -> None:
    record = tmp_path / "logout.json"
    binary = _muse_script(tmp_path, f"open({str(record)!r}, 'w').write(json.dumps(args))")
    ctx = FakeContext(tmp_path, binary=binary, environ=environ)
    session = _session(ctx, tmp_path)
    other = _session(ctx, tmp_path, "0190b5c2-7a1e-7c3d-9f00-000000000002")
    assert await _run(ctx, session, [text("/logout")]) == "end_turn"
    assert json.loads(record.read_text()) == ["logout"]
    assert session.closed
    assert other.closed
    (reply,) = ctx.replies()
    assert "Signed out" in reply
    assert said in reply
    assert "mk-test-0123456789" not in reply


async def test_a_failed_logout_is_told_in_the_reply(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, binary=_muse_script(tmp_path, "sys.exit(4)"))
    session = _session(ctx, tmp_path)
    assert await _run(ctx, session, [text("/logout")]) == "end_turn"
    (reply,) = ctx.replies()
    assert "did not complete" in reply
    assert "exit code 4" in reply
    assert session.closed


# ---------------------------------------------------------------------------- advertise


def test_the_built_ins_come_first_and_only_rename_takes_input() -> None:
    advertised = available_commands([])
    assert [command.name for command in advertised][:5] == [
        "status",
        "models",
        "skills",
        "rename",
        "logout",
    ]
    assert [command.name for command in advertised] == list(BUILTINS)
    hints = {c.name: (c.input.hint if c.input is not None else None) for c in advertised}
    assert {name: hints[name] for name in ("status", "models", "skills", "rename", "logout")} == {
        "status": None,
        "models": None,
        "skills": None,
        "rename": "new title",
        "logout": None,
    }
    # The session controls and reviews: those that take an argument say what it is.
    assert (hints["compact"], hints["mcp"]) == (None, None)
    for name in ("goal", "review", "review-branch", "review-commit"):
        assert hints[name], name
    assert all(command.description for command in advertised)


def test_active_skills_follow_the_built_ins_without_collisions_or_duplicates() -> None:
    skills = [
        *parse_skills(json.dumps(SKILLS).encode()),
        Skill("review", "Again.", "user", "on"),
        Skill("has space", "Unusable name.", "user", "on"),
        Skill("quiet", "", "workspace", "on"),
    ]
    advertised = available_commands(skills)
    names = [command.name for command in advertised]
    # The "review" skills are named like the /review built-in, so they are left out.
    assert names == [*BUILTINS, "bundled:plan", "quiet"]
    assert advertised[len(BUILTINS)].description == "Plan first."
    assert advertised[len(BUILTINS) + 1].description == "Muse workspace skill"


def test_at_most_two_hundred_skills_are_advertised() -> None:
    many = [Skill(f"s{index}", "", "user", "on") for index in range(MAX_SKILLS_SHOWN + 10)]
    assert len(available_commands(many)) == len(BUILTINS) + MAX_SKILLS_SHOWN


async def test_advertise_sends_the_built_ins_and_the_active_skills(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path, binary=_skills_script(tmp_path))
    session = _session(ctx, tmp_path)
    with anyio.fail_after(WAIT):
        await commands.advertise(ctx, session)
    (update,) = ctx.updates
    assert isinstance(update, acp.AvailableCommandsUpdateSessionUpdate)
    names = [command.name for command in update.available_commands]
    assert names == [*BUILTINS, "bundled:plan"]


async def test_advertise_falls_back_to_the_built_ins_when_skills_are_unavailable(
    tmp_path: Path,
) -> None:
    ctx = FakeContext(tmp_path, binary=_muse_script(tmp_path, "sys.exit(1)"))
    session = _session(ctx, tmp_path)
    with anyio.fail_after(WAIT):
        await commands.advertise(ctx, session)
    (update,) = ctx.updates
    assert isinstance(update, acp.AvailableCommandsUpdateSessionUpdate)
    assert [command.name for command in update.available_commands] == list(BUILTINS)


async def test_advertise_sends_nothing_for_a_session_closed_meanwhile(tmp_path: Path) -> None:
    ctx = FakeContext(tmp_path)
    session = _session(ctx, tmp_path)
    session.closed = True
    with anyio.fail_after(WAIT):
        await commands.advertise(ctx, session)
    assert ctx.updates == []


async def test_sessions_opened_together_share_one_skills_listing(tmp_path: Path) -> None:
    record = tmp_path / "runs"
    body = f"open({str(record)!r}, 'a').write('x')\nprint({json.dumps(SKILLS)!r})"
    ctx = FakeContext(tmp_path, binary=_muse_script(tmp_path, body))
    sessions = [
        _session(ctx, tmp_path, f"0190b5c2-7a1e-7c3d-9f00-00000000001{i}") for i in range(4)
    ]
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            for session in sessions:
                tasks.start_soon(commands.advertise, ctx, session)
    assert record.read_text() == "x", "one listing served every advertisement"
    assert len(ctx.updates) == 4
    assert await _run(ctx, sessions[0], [text("/skills")]) == "end_turn"
    assert record.read_text() == "xx", "/skills always lists afresh"
