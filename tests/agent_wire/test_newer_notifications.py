"""What newer Muse hosts announce mid-turn, on every version muse-sim plays: a model call Muse
retries after a backoff is told to the user (a ``notice`` for a client that set
``session.notices``, the same words in the chat otherwise), from ``turn/retryScheduled`` or,
where the host has it (1.4.8 on), ``turn/modelRetryScheduled``; and Muse's own reviewer holding
an approval (``approval/reviewing``, 1.4.9 on) shows on the tool's card before the user is
asked, after which the approval goes on as before. A host without the reviewer asks as usual and
the card never claims a review. When Muse's answer is done but its background checks hold the
turn open (``turn/foregroundCompleted``), the prompt goes on until the turn ends, with what the
checks add, and a client with notices is told what it waits on; a plain client's chat is not.
A question put to a client that shows forms is engaged at once (``userInput/engaged``) where
Muse takes it (1.4.4 on), so Muse's countdown never answers it while the user is on the form;
elsewhere nothing is sent and the countdown runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.agent.cards.card_states import REVIEW_META
from muse_acp.sim.model.turn_waits import CHECK_REPORT, REMINDER_CHECK
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.state.profile import load_profile

from .harness import WAIT, Agent, RecordingClient, make_world, running_agent
from .test_host_versions import FORMS, VERSIONS
from .test_notices import NOTICES

pytestmark = pytest.mark.anyio

RETRY_WORDS: Final = "retrying in 1.5 s (attempt 2 of 3): overloaded."
COUNTDOWN: Final = 1.0
"""Seconds after which muse-sim's timed question answers itself unless engaged."""
ON_THE_FORM: Final = 2.0
"""Seconds the user spends on the form: well past the countdown."""


class SlowUser(RecordingClient):
    """Answers each form with the first option, after ``ON_THE_FORM`` seconds on it."""

    def __init__(self) -> None:
        super().__init__()
        self.answer_elicitations = True
        self.shown = 0

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.shown += 1
        await anyio.sleep(ON_THE_FORM)
        return await super().create_elicitation(message, mode, **kwargs)


def _reviews(agent: Agent, session: str) -> list[Any]:
    return [
        u
        for s, u in agent.client.updates
        if s == session
        and u.session_update == "tool_call_update"
        and REVIEW_META in (u.field_meta or {})
    ]


def _publishes(version: str, method: str) -> bool:
    return load_profile(HOST_VERSIONS[version]).publishes(method)


def _publishes_engaged(version: str) -> bool:
    return load_profile(HOST_VERSIONS[version]).takes("userInput/engaged")


def _has_reviewer(version: str) -> bool:
    return _publishes(version, "approval/reviewing")


def _first(agent: Agent, holds: Any) -> int:
    """The index of the first frame the agent sent to the client that ``holds``."""
    return next(i for i, (way, frame) in enumerate(agent.frames) if way == "in" and holds(frame))


def _chunk_with(text: str) -> Any:
    def holds(frame: dict[str, Any]) -> bool:
        update = frame.get("params", {}).get("update", {})
        return text in str(update.get("content", {}).get("text", ""))

    return holds


def _notice(frame: dict[str, Any]) -> bool:
    update: dict[str, Any] = frame.get("params", {}).get("update", {})
    return update.get("sessionUpdate") == "notice"


def _answer(frame: dict[str, Any]) -> bool:
    return "stopReason" in (frame.get("result") or {})


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_prompt_outlasts_the_answer_while_background_checks_hold_the_turn(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world, capabilities=NOTICES) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "first the answer\nsim:foreground")
    assert response.stop_reason == "end_turn"
    report = _first(agent, _chunk_with(CHECK_REPORT.split()[0]))  # streamed in pieces
    assert report < _first(agent, _answer), "what the checks add belongs to the prompt"
    notices = agent.raw_updates(session, "notice")
    if not _publishes(version, "turn/foregroundCompleted"):
        assert notices == []
        return
    [notice] = notices
    assert notice["severity"] == "info"
    assert notice["title"] == "Muse's answer is complete; its background checks are still running"
    assert f"({REMINDER_CHECK})" in notice["description"]
    assert _first(agent, _notice) < report, "told while the turn waits on the checks"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_retry_is_a_notice_and_the_reviewer_shows_on_the_card(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    reviews_when_asked: list[int] = []
    async with running_agent(world, capabilities=NOTICES) as agent:
        session = await agent.new_session()

        async def asked() -> None:
            reviews_when_asked.append(len(_reviews(agent, session)))

        agent.client.on_permission = asked
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:retry\nsim:review ls -la")
    assert response.stop_reason == "end_turn"
    [notice] = agent.raw_updates(session, "notice")
    assert notice["severity"] == "warning"
    assert notice["title"] == "Retrying the model call (attempt 2 of 3)"
    assert RETRY_WORDS in notice["description"]
    assert RETRY_WORDS not in agent.client.text(session), "a notice is never also chat text"
    # The approval goes on as before: asked once, decided, the command ran.
    [request] = agent.client.permission_requests
    [decision] = world.host_requests("approval/decide")
    assert decision["params"]["choiceId"] == request.options[0].option_id
    reviews = _reviews(agent, session)
    if not _has_reviewer(version):
        assert reviews == []
        assert reviews_when_asked == [0]
        return
    [review] = reviews
    assert reviews_when_asked == [1], "the card says so before the user is asked"
    assert review.tool_call_id == request.tool_call.tool_call_id
    assert review.title.startswith("Muse's reviewer is checking: ")
    meta = review.field_meta[REVIEW_META]
    assert meta["state"] == "reviewing"
    assert meta["approvalId"]
    titles = [
        u.title
        for s, u in agent.client.updates
        if s == session and u.session_update == "tool_call_update" and u.title
        if u.tool_call_id == review.tool_call_id
    ]
    assert not titles[-1].startswith("Muse's reviewer"), "the card's own title comes back"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_without_notices_reads_the_retry_in_the_chat(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:retry\nafter the retry\nsim:foreground")
    assert response.stop_reason == "end_turn"
    chat = agent.client.text(session)
    assert "background checks" not in chat, "the chat already shows the whole answer"
    assert CHECK_REPORT in chat
    assert chat.count(RETRY_WORDS) == 1
    assert chat.index(RETRY_WORDS) < chat.index("after the retry")
    assert agent.raw_updates(session, "notice") == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_question_on_a_form_is_engaged_so_muse_never_answers_it_for_the_user(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    user = SlowUser()
    async with running_agent(world, user, capabilities=FORMS) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT + ON_THE_FORM):
            response = await agent.prompt(session, f"sim:timed-ask {COUNTDOWN}")
    assert response.stop_reason == "end_turn"
    assert user.shown == 1
    engaged = world.host_requests("userInput/engaged")
    chat = agent.client.text(session)
    if not _publishes_engaged(version):
        assert engaged == [], "a host that does not take it is never sent it"
        assert "The question was not answered." in chat  # Muse's countdown settled it
        assert "You answered" not in chat
        return
    [answer] = world.host_requests("userInput/answer")
    assert [e["params"] for e in engaged] == [
        {"sessionId": session, "userInputId": answer["params"]["userInputId"]}
    ]
    assert "You answered: alpha" in chat, "the user's answer counts, however long it took"
