"""User titles: what ``/rename`` accepts, and which title a session shows."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.options.titles import (
    MAX_TITLE_LENGTH,
    PROMPT_TITLE_LENGTH,
    check_user_title,
    display_title,
    title_problem,
)
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp_wire import msp


def _row(**members: Any) -> msp.Session:
    return msp.Session.model_validate(
        {
            "sessionId": "0190b5c2-0000-7000-8000-000000000001",
            "path": "",
            "status": "idle",
            "activeTurnId": None,
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            "workspaceRoot": "/repo",
            "providerId": None,
            "modelId": None,
            "turnCount": 1,
            "forkedFrom": None,
            **members,
        }
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Release plan", "Release plan"),
        ("  padded title \t", "padded title"),
        ("x" * MAX_TITLE_LENGTH, "x" * MAX_TITLE_LENGTH),
        (f"  {'y' * MAX_TITLE_LENGTH}  ", "y" * MAX_TITLE_LENGTH),
        ("Titre 中文 ✓", "Titre 中文 ✓"),
        ("a", "a"),
    ],
)
def test_acceptable_titles_are_returned_trimmed(raw: str, expected: str) -> None:
    assert check_user_title(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "   ",
        "\t\n",
        "x" * (MAX_TITLE_LENGTH + 1),
        "first line\nsecond line",
        "carriage\rreturn",
        "tab\tinside",
        "bell\x07",
        "delete\x7f",
        "c1\x85control",
        "line\u2028separator",
        "paragraph\u2029separator",
        "nul\x00byte",
    ],
)
def test_unacceptable_titles_are_invalid_params(raw: str | None) -> None:
    with pytest.raises(RpcError) as caught:
        check_user_title(raw)
    assert caught.value.code == INVALID_PARAMS
    assert "/rename" in caught.value.message


def test_the_refusal_says_what_is_wrong_with_the_title() -> None:
    assert title_problem("") == "the title is empty"
    assert title_problem("z" * 513) is not None
    assert "513" in (title_problem("z" * 513) or "")
    assert "line break" in (title_problem("a\nb") or "")
    assert title_problem("fine") is None


@pytest.mark.parametrize(
    ("user_title", "members", "expected"),
    [
        ("Mine", {"title": "Host title", "name": "slug", "firstUserPrompt": "hi"}, "Mine"),
        ("Mine", None, "Mine"),
        (None, {"title": "Host title", "name": "slug", "firstUserPrompt": "hi"}, "Host title"),
        ("", {"title": "Host title"}, "Host title"),
        (None, {"title": None, "name": "slug", "firstUserPrompt": "hi"}, "slug"),
        (None, {"title": "  ", "name": "slug"}, "slug"),
        (None, {"name": "", "firstUserPrompt": "fix the build"}, "fix the build"),
        (None, {"firstUserPrompt": "  fix\n\tthe   build \n"}, "fix the build"),
        (None, {"firstUserPrompt": " \n "}, None),
        (None, {}, None),
        (None, None, None),
    ],
)
def test_display_title_prefers_the_user_then_title_name_and_first_prompt(
    user_title: str | None, members: dict[str, Any] | None, expected: str | None
) -> None:
    row = None if members is None else _row(**members)
    assert display_title(user_title, row) == expected


def test_a_long_first_prompt_is_cut_to_eighty_characters_with_an_ellipsis() -> None:
    prompt = "word " * 40
    title = display_title(None, _row(firstUserPrompt=prompt))
    assert title is not None
    assert len(title) == PROMPT_TITLE_LENGTH
    assert title.endswith("…")
    assert title[:-1] == title[:-1].rstrip()
    assert " ".join(prompt.split()).startswith(title[:-1])


def test_a_first_prompt_of_exactly_eighty_characters_is_kept_whole() -> None:
    prompt = "p" * PROMPT_TITLE_LENGTH
    assert display_title(None, _row(firstUserPrompt=prompt)) == prompt
    assert display_title(None, _row(firstUserPrompt=prompt + "q")) == "p" * 79 + "…"
