"""Muse approvals become ACP permission requests, and the client's answers become host choices."""

from __future__ import annotations

import json
from typing import Any, Literal

import acp.schema as sdk
import pytest

from muse_acp.agent.asks.permissions import (
    TITLE_LIMIT,
    ApprovalView,
    PermissionCard,
    automatic_choice,
    choice_from_response,
    option_kind,
    permission_request,
)
from muse_acp.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from muse_acp_wire import acp, msp

ALLOW_ONCE = {
    "choiceId": "allow_once",
    "label": "Allow once",
    "decision": "approved",
    "scope": "once",
}
ALLOW_SESSION = {
    "choiceId": "allow_session",
    "label": "Allow for this session",
    "decision": "approvedForSession",
    "scope": "session",
}
ALLOW_PREFIX = {
    "choiceId": "allow_local_prefix",
    "label": "Always allow echo here",
    "decision": "approvedPolicyAmendment",
    "scope": "localPersistent",
}
DENY_ONCE = {"choiceId": "deny_once", "label": "Deny", "decision": "denied", "scope": "once"}
DENY_ALWAYS = {
    "choiceId": "deny_always",
    "label": "Always deny",
    "decision": "deniedPolicyAmendment",
    "scope": "localPersistent",
}
ABORT = {"choiceId": "abort", "label": "Reject", "decision": "abort", "scope": "once"}


def _stage(index: int, total: int, argv: list[str], resolution: str) -> dict[str, Any]:
    return {
        "requirementId": {"approvalId": "apr-1", "sourceIndex": index},
        "position": index + 1,
        "totalStages": total,
        "argv": argv,
        "resolution": {"kind": resolution},
    }


def _requested(
    *,
    raw_args: str = '{"command": "pwd", "description": "Show the directory"}',
    choices: list[dict[str, str]] | None = None,
    subject: dict[str, Any] | None = None,
    source_index: int = 0,
    tool_name: str = "shell",
    protected_write: bool | None = None,
) -> msp.ApprovalRequestedParams:
    extra = {} if protected_write is None else {"protectedWrite": protected_write}
    return msp.ApprovalRequestedParams.model_validate(
        {
            **extra,
            "sessionId": "host-session",
            "approvalId": "apr-1",
            "turnId": "turn-1",
            "taskId": "task-1",
            "itemId": "item-1",
            "toolCallId": "call-1",
            "toolName": tool_name,
            "rawArgs": raw_args,
            "viewCursor": "v:host-session:7",
            "subject": subject or {"kind": "toolCall", "toolName": tool_name},
            "currentRequirementId": {"approvalId": "apr-1", "sourceIndex": source_index},
            "availableChoices": [ALLOW_ONCE, ABORT] if choices is None else choices,
        }
    )


def _view(**kwargs: Any) -> ApprovalView:
    return ApprovalView.from_requested(_requested(**kwargs))


def _wire(request: acp.RequestPermissionRequest) -> dict[str, Any]:
    """The request's JSON, checked to round-trip and to be read alike by the official SDK."""
    raw = request.model_dump(mode="json", by_alias=True, exclude_unset=True)
    again = acp.RequestPermissionRequest.model_validate(raw)
    assert again.model_dump(mode="json", by_alias=True, exclude_unset=True) == raw
    oracle = sdk.RequestPermissionRequest.model_validate(raw)
    # The SDK's models predate the tool call `name` (ACP 1.22) and drop it; all else matches.
    unnamed = {**raw, "toolCall": {k: v for k, v in raw["toolCall"].items() if k != "name"}}
    assert oracle.model_dump(mode="json", by_alias=True, exclude_unset=True) == unnamed
    return raw


def _choice(decision: str, scope: str) -> msp.ApprovalChoice:
    return msp.ApprovalChoice(choice_id="c", label="C", decision=decision, scope=scope)


@pytest.mark.parametrize(
    ("decision", "scope", "kind"),
    [
        ("approved", "once", "allow_once"),
        ("approved", "session", "allow_always"),
        ("approved", "localPersistent", "allow_always"),
        ("approvedForSession", "once", "allow_once"),
        ("approvedForSession", "session", "allow_always"),
        ("approvedForSession", "localPersistent", "allow_always"),
        ("approvedPolicyAmendment", "once", "allow_once"),
        ("approvedPolicyAmendment", "session", "allow_always"),
        ("approvedPolicyAmendment", "localPersistent", "allow_always"),
        ("denied", "once", "reject_once"),
        ("denied", "session", "reject_always"),
        ("denied", "localPersistent", "reject_always"),
        ("abort", "once", "reject_once"),
        ("abort", "session", "reject_always"),
        ("abort", "localPersistent", "reject_always"),
        ("deniedPolicyAmendment", "once", "reject_always"),
        ("deniedPolicyAmendment", "session", "reject_always"),
        ("deniedPolicyAmendment", "localPersistent", "reject_always"),
        ("someFutureDecision", "once", "reject_once"),
        ("someFutureDecision", "session", "reject_always"),
        ("approved", "someFutureScope", "allow_always"),
    ],
)
def test_option_kind_follows_decision_and_scope(decision: str, scope: str, kind: str) -> None:
    assert option_kind(_choice(decision, scope)) == kind


def test_a_request_offers_every_host_choice_in_host_order() -> None:
    view = _view(choices=[ALLOW_ONCE, ALLOW_PREFIX, ALLOW_SESSION, DENY_ALWAYS, ABORT])
    raw = _wire(permission_request("acp-session", view, tool_call_id="tool-7", kind="execute"))
    assert raw == {
        "sessionId": "acp-session",
        "toolCall": {
            "toolCallId": "tool-7",
            "title": "Show the directory",
            "name": "shell",
            "kind": "execute",
            "status": "pending",
            "rawInput": {"command": "pwd", "description": "Show the directory"},
        },
        "options": [
            {
                "optionId": "allow_once",
                "name": "Allow once",
                "kind": "allow_once",
                "_meta": {"muse/decision": "approved", "muse/scope": "once"},
            },
            {
                "optionId": "allow_local_prefix",
                "name": "Always allow echo here",
                "kind": "allow_always",
                "_meta": {
                    "muse/decision": "approvedPolicyAmendment",
                    "muse/scope": "localPersistent",
                },
            },
            {
                "optionId": "allow_session",
                "name": "Allow for this session",
                "kind": "allow_always",
                "_meta": {"muse/decision": "approvedForSession", "muse/scope": "session"},
            },
            {
                "optionId": "deny_always",
                "name": "Always deny",
                "kind": "reject_always",
                "_meta": {
                    "muse/decision": "deniedPolicyAmendment",
                    "muse/scope": "localPersistent",
                },
            },
            {
                "optionId": "abort",
                "name": "Reject",
                "kind": "reject_once",
                "_meta": {"muse/decision": "abort", "muse/scope": "once"},
            },
        ],
        "_meta": {
            "muse/approval": {
                "approvalId": "apr-1",
                "turnId": "turn-1",
                "itemId": "item-1",
                "requirement": {"approvalId": "apr-1", "sourceIndex": 0},
                "protectedWrite": False,
            }
        },
    }


def test_an_unknown_tool_kind_is_left_out_of_the_tool_call() -> None:
    raw = _wire(permission_request("s", _view(), tool_call_id="t", kind=None))
    assert "kind" not in raw["toolCall"]


@pytest.mark.parametrize(
    ("raw_args", "raw_input"),
    [
        ('{"path": "a.txt"}', {"path": "a.txt"}),
        ("not json", {"arguments": "not json"}),
        ('["a", "b"]', {"arguments": '["a", "b"]'}),
        ('"text"', {"arguments": '"text"'}),
        ("", {"arguments": ""}),
    ],
)
def test_raw_input_is_the_argument_object_or_the_argument_text(
    raw_args: str, raw_input: dict[str, Any]
) -> None:
    raw = _wire(permission_request("s", _view(raw_args=raw_args), tool_call_id="t", kind=None))
    assert raw["toolCall"]["rawInput"] == raw_input


STAGED_COMMAND = {"kind": "shell", "command": "echo one > a.txt; ls .; echo 'two words'"}


@pytest.mark.parametrize(
    ("raw_args", "stages", "source_index", "title"),
    [
        pytest.param(
            '{"description": "Show files"}',
            [_stage(0, 1, ["ls", "-la"], "unresolved")],
            0,
            "Show files",
            id="a one-stage command uses the description",
        ),
        pytest.param(
            '{"command": "echo one > a.txt; ls .; echo \'two words\'"}',
            [
                _stage(0, 3, ["echo", "one"], "allowOnce"),
                _stage(1, 3, ["ls", "."], "unresolved"),
                _stage(2, 3, ["echo", "two words"], "unresolved"),
            ],
            1,
            "Stage 2 of 3: ls .",
            id="stage 2 of 3",
        ),
        pytest.param(
            "{}",
            [
                _stage(0, 3, ["echo", "one"], "unresolved"),
                _stage(1, 3, ["ls", "."], "unresolved"),
                _stage(2, 3, ["printf", "two words", 'say "hi"', "a\tb", "--x=1,2", "~/f"], "x"),
            ],
            2,
            'Stage 3 of 3: printf "two words" "say \\"hi\\"" "a\\tb" --x=1,2 "~/f"',
            id="tokens that are not plain words are quoted",
        ),
        pytest.param(
            '{"command": "echo one; ls ."}',
            [
                _stage(0, 3, ["echo", "one"], "unresolved"),
                _stage(1, 3, ["ls", "."], "known_safe"),
                _stage(2, 3, ["cat", "a"], "known_safe"),
            ],
            0,
            "echo one; ls .",
            id="known-safe stages do not count, so the command is the title",
        ),
        pytest.param(
            '{"path": "src/app.py"}',
            [
                _stage(0, 2, ["echo", "one"], "unresolved"),
                _stage(1, 2, ["ls"], "unresolved"),
            ],
            5,
            "src/app.py",
            id="a current stage missing from the subject falls back to the path",
        ),
        pytest.param(
            '{"command": "   "}',
            None,
            0,
            "shell",
            id="without usable arguments the tool name is the title",
        ),
        pytest.param(
            '{"command": "line one\\nline two"}',
            None,
            0,
            "line one line two",
            id="a multi-line command is shown on one line",
        ),
    ],
)
def test_permission_titles(
    raw_args: str, stages: list[dict[str, Any]] | None, source_index: int, title: str
) -> None:
    subject = {**STAGED_COMMAND, "stages": stages} if stages is not None else None
    view = _view(raw_args=raw_args, subject=subject, source_index=source_index)
    raw = _wire(permission_request("s", view, tool_call_id="t", kind="execute"))
    assert raw["toolCall"]["title"] == title


def test_a_protected_write_says_so_in_its_title_and_meta() -> None:
    view = _view(
        raw_args=json.dumps({"path": ".muse/settings.json", "content": "{}"}),
        subject={"kind": "fileAccess", "path": ".muse/settings.json", "access": "write"},
        tool_name="write_file",
        protected_write=True,
    )
    raw = _wire(permission_request("s", view, tool_call_id="t", kind="edit"))
    assert raw["toolCall"]["title"] == "Protected write: .muse/settings.json"
    assert raw["_meta"]["muse/approval"]["protectedWrite"] is True
    assert acp.MusePermissionMeta.model_validate(raw["_meta"]).muse_approval is not None


def test_a_long_title_is_cut_to_the_limit() -> None:
    view = _view(raw_args=json.dumps({"command": "x" * 1000}))
    title = _wire(permission_request("s", view, tool_call_id="t", kind=None))["toolCall"]["title"]
    assert len(title) == TITLE_LIMIT
    assert title.startswith("xxxx")


def _updated(**members: Any) -> msp.ApprovalUpdatedParams:
    return msp.ApprovalUpdatedParams.model_validate(
        {
            "sessionId": "host-session",
            "viewCursor": "v:host-session:9",
            "approvalId": "apr-1",
            "change": {"kind": "stageResolved"},
            **members,
        }
    )


def test_an_update_replaces_the_requirement_choices_and_subject_it_carries() -> None:
    stages = [_stage(0, 2, ["echo", "one"], "unresolved"), _stage(1, 2, ["ls"], "unresolved")]
    view = _view(subject={**STAGED_COMMAND, "stages": stages})
    resolved = [_stage(0, 2, ["echo", "one"], "allowOnce"), _stage(1, 2, ["ls"], "unresolved")]
    later = view.updated(
        _updated(
            currentRequirementId={"approvalId": "apr-1", "sourceIndex": 1},
            availableChoices=[ALLOW_ONCE, ALLOW_SESSION, ABORT],
            subject={**STAGED_COMMAND, "stages": resolved},
        )
    )
    assert (view.key, later.key) == (("apr-1", 0), ("apr-1", 1))
    assert [c.choice_id for c in later.choices] == ["allow_once", "allow_session", "abort"]
    raw = _wire(permission_request("s", later, tool_call_id="t", kind="execute"))
    assert raw["toolCall"]["title"] == "Stage 2 of 2: ls"
    assert raw["_meta"]["muse/approval"]["requirement"] == {"approvalId": "apr-1", "sourceIndex": 1}


def test_an_update_without_members_keeps_the_current_view() -> None:
    view = _view()
    assert view.updated(_updated(change={"kind": "policyPersistence", "status": "ok"})) == view


def test_an_update_for_another_approval_is_refused() -> None:
    with pytest.raises(ValueError, match="apr-2"):
        _view().updated(_updated(approvalId="apr-2"))


def _selected(option_id: str) -> acp.RequestPermissionResponse:
    return acp.RequestPermissionResponse.model_validate(
        {"outcome": {"outcome": "selected", "optionId": option_id}}
    )


CANCELLED = acp.RequestPermissionResponse.model_validate({"outcome": {"outcome": "cancelled"}})


@pytest.mark.parametrize("option_id", ["allow_once", "abort"])
def test_a_selected_host_choice_is_returned_as_is(option_id: str) -> None:
    assert choice_from_response(_view(), _selected(option_id)) == option_id


def test_a_selected_option_muse_did_not_offer_is_rejected() -> None:
    with pytest.raises(RpcError) as caught:
        choice_from_response(_view(), _selected("allow_always"))
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == (
        "the client selected permission option 'allow_always', which Muse did not offer for "
        "approval 'apr-1'; the offered options are 'allow_once', 'abort'"
    )


def test_a_choice_that_an_update_withdrew_is_rejected() -> None:
    view = _view(choices=[ALLOW_ONCE, ALLOW_SESSION, ABORT]).updated(
        _updated(availableChoices=[ALLOW_ONCE, ABORT])
    )
    with pytest.raises(RpcError) as caught:
        choice_from_response(view, _selected("allow_session"))
    assert caught.value.code == INVALID_PARAMS


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        pytest.param([ALLOW_ONCE, ABORT], "abort", id="abort"),
        pytest.param([ALLOW_ONCE, DENY_ALWAYS, DENY_ONCE, ABORT], "deny_once", id="prefers once"),
        pytest.param([ALLOW_SESSION, DENY_ALWAYS], "deny_always", id="any deny without once"),
    ],
)
def test_a_cancelled_request_declines_with_a_host_deny_choice(
    choices: list[dict[str, str]], expected: str
) -> None:
    assert choice_from_response(_view(choices=choices), CANCELLED) == expected


def test_a_cancelled_request_without_a_host_deny_choice_fails_the_turn() -> None:
    unknown = {"choiceId": "later", "label": "Later", "decision": "postpone", "scope": "once"}
    with pytest.raises(RpcError) as caught:
        choice_from_response(_view(choices=[ALLOW_ONCE, ALLOW_SESSION, unknown]), CANCELLED)
    assert caught.value.code == INTERNAL_ERROR
    assert caught.value.data == {
        "failure": {
            "kind": "permissionFailed",
            "source": "client",
            "retryable": True,
            "phase": "running",
            "execution": "possiblySubmitted",
        }
    }
    assert "offered no choice that denies the action" in caught.value.message


@pytest.mark.parametrize(
    ("policy", "choices", "expected"),
    [
        pytest.param("approve", [ABORT, ALLOW_SESSION, ALLOW_ONCE], "allow_once", id="approve"),
        pytest.param("approve", [ALLOW_SESSION, ALLOW_PREFIX, ABORT], None, id="no once approve"),
        pytest.param("reject", [ALLOW_ONCE, DENY_ALWAYS, ABORT], "abort", id="reject by abort"),
        pytest.param("reject", [ALLOW_ONCE, DENY_ONCE, ABORT], "deny_once", id="reject by deny"),
        pytest.param("reject", [ALLOW_ONCE, DENY_ALWAYS], None, id="no once deny"),
        pytest.param(
            "approve",
            [{**ALLOW_SESSION, "scope": "once"}],
            None,
            id="a session approval is never automatic",
        ),
    ],
)
def test_automatic_choices(
    policy: Literal["approve", "reject"], choices: list[dict[str, str]], expected: str | None
) -> None:
    assert automatic_choice(_view(choices=choices), policy) == expected


def test_the_card_says_what_the_tool_call_shows_beyond_the_approval() -> None:
    diff = acp.DiffToolCallContent(type="diff", path="/w/a.txt", old_text="a\n", new_text="b\n")
    card = PermissionCard(None, (diff,), (acp.ToolCallLocation(path="/w/a.txt"),))
    raw = _wire(permission_request("s", _view(), tool_call_id="t", kind="edit", card=card))
    assert "status" not in raw["toolCall"]
    assert raw["toolCall"]["content"] == [
        {"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}
    ]
    assert raw["toolCall"]["locations"] == [{"path": "/w/a.txt"}]
    plain = _wire(permission_request("s", _view(), tool_call_id="t", kind="edit"))["toolCall"]
    assert (plain["status"], "content" in plain, "locations" in plain) == ("pending", False, False)
