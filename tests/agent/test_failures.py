"""Every way a turn ends maps to one ACP stop reason or one error with a structured failure."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from muse_acp.agent.asks.ask_failures import (
    automatic_unavailable,
    client_answer_failed,
    user_input_unsupported,
)
from muse_acp.agent.errors.failures import (
    Failure,
    Phase,
    deadline_exceeded,
    host_exited,
    host_rejected,
    session_in_use,
    stop_reason,
)
from muse_acp.rpc.errors import AUTH_REQUIRED, INTERNAL_ERROR, RpcError
from muse_acp_wire import acp, msp


def _completed(terminal: str, **members: Any) -> msp.TurnCompletedParams:
    return msp.TurnCompletedParams.model_validate(
        {
            "sessionId": "host-session",
            "viewCursor": "v:host-session:40",
            "turnId": "turn-1",
            "terminal": terminal,
            **members,
        }
    )


def _failed(kind: str, message: str, *, retryable: bool = True) -> msp.TurnCompletedParams:
    error = {"kind": kind, "message": message, "retryable": retryable}
    return _completed("failed", reason=message, error=error)


BEFORE_SUBMISSION = {"starting", "handshake", "preparing", "reading", "authenticating", "deleting"}


def _failure(kind: str, source: str, retryable: bool, phase: str, **extra: str) -> Any:
    execution = "notSubmitted" if phase in BEFORE_SUBMISSION else "possiblySubmitted"
    return {
        "failure": {
            "kind": kind,
            "source": source,
            "retryable": retryable,
            "phase": phase,
            "execution": execution,
            **extra,
        }
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (_completed("completed"), "end_turn"),
        (_completed("cancelled", reason="cancelled during model step"), "cancelled"),
        (_completed("interrupted", reason="interrupted by the client"), "cancelled"),
        (
            _failed("stepLimit", "the turn used all of its steps", retryable=False),
            "max_turn_requests",
        ),
    ],
)
def test_normal_endings_map_to_stop_reasons(
    params: msp.TurnCompletedParams, expected: acp.StopReason
) -> None:
    assert stop_reason(params) == expected


AUTH_HINT = (
    "Log in to Muse (run `muse login`) or set META_API_KEY in the adapter's environment, then "
    "send the prompt again."
)
SETTINGS_HINT = (
    "Check the session's model and provider settings and that the workspace is usable, then "
    "send the prompt again."
)
INSPECT_HINT = "Look over the session's history for what went wrong, then send the prompt again."


@pytest.mark.parametrize(
    ("params", "code", "message", "data"),
    [
        pytest.param(
            _failed("authRequired", "not logged in: run /login", retryable=False),
            AUTH_REQUIRED,
            f"Muse could not finish the turn: not logged in: run /login. {AUTH_HINT}",
            _failure("authRequired", "provider", False, "running"),
            id="auth required",
        ),
        pytest.param(
            _failed("modelError", "the provider answered 503"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: the provider answered 503. {INSPECT_HINT}",
            _failure("modelError", "provider", True, "running"),
            id="model error",
        ),
        pytest.param(
            _failed("configError", "unknown model 'spark-0'.", retryable=False),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: unknown model 'spark-0'. {SETTINGS_HINT}",
            _failure("configError", "host", False, "running"),
            id="config error",
        ),
        pytest.param(
            _failed("environmentError", "sandbox is unavailable"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: sandbox is unavailable. {SETTINGS_HINT}",
            _failure("environmentError", "host", True, "running"),
            id="environment error",
        ),
        pytest.param(
            _failed("launchError", "could not launch the workflow!"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: could not launch the workflow! {INSPECT_HINT}",
            _failure("launchError", "host", True, "running"),
            id="other host error",
        ),
        pytest.param(
            _failed("futureFailure", "something new"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: something new. {INSPECT_HINT}",
            _failure("futureFailure", "host", True, "running"),
            id="unknown error kind",
        ),
        pytest.param(
            _completed("failed", reason="lost the model"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: lost the model. {INSPECT_HINT}",
            _failure("unspecified", "host", False, "running"),
            id="failure without error",
        ),
        pytest.param(
            _completed("failed"),
            INTERNAL_ERROR,
            f"Muse could not finish the turn: Muse gave no reason. {INSPECT_HINT}",
            _failure("unspecified", "host", False, "running"),
            id="failure without error or reason",
        ),
        pytest.param(
            _completed("vanished"),
            INTERNAL_ERROR,
            "Muse could not finish the turn: it reported an outcome this adapter does not know "
            f"('vanished'). {INSPECT_HINT}",
            _failure("unknownTerminal", "host", False, "running"),
            id="unknown terminal",
        ),
    ],
)
def test_failed_turns_map_to_errors(
    params: msp.TurnCompletedParams, code: int, message: str, data: Any
) -> None:
    error = stop_reason(params)
    assert isinstance(error, RpcError)
    assert (error.code, error.message, error.data) == (code, message, data)


def test_host_messages_in_turn_errors_are_redacted_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("META_API_KEY", "mk-live-0123456789")
    leaked = _failed("modelError", "rejected mk-live-0123456789 via Bearer abc " + "x" * 5000)
    error = stop_reason(leaked)
    assert isinstance(error, RpcError)
    assert "mk-live" not in error.message
    assert "Bearer [redacted]" in error.message
    assert error.message.endswith(INSPECT_HINT)
    assert len(error.message) < 1200


@pytest.mark.parametrize(
    ("phase", "seconds", "message", "execution"),
    [
        (
            "starting",
            120.0,
            "Muse did not respond in time: starting the Muse host took longer than 120 s. No "
            "model turn was submitted, so sending the prompt again is safe once the host "
            "responds.",
            "notSubmitted",
        ),
        (
            "handshake",
            2.5,
            "Muse did not respond in time: completing the handshake with the Muse host took "
            "longer than 2.5 s. No model turn was submitted, so sending the prompt again is safe "
            "once the host responds.",
            "notSubmitted",
        ),
        (
            "submitting",
            30,
            "Muse did not respond in time: submitting the turn to Muse took longer than 30 s. "
            "A model turn may already have been submitted and may still run in Muse; look at "
            "the session's history before sending the prompt again.",
            "possiblySubmitted",
        ),
        (
            "cancelling",
            5,
            "Muse did not respond in time: cancelling the turn took longer than 5 s. A model "
            "turn may already have been submitted and may still run in Muse; look at the "
            "session's history before sending the prompt again.",
            "possiblySubmitted",
        ),
    ],
)
def test_deadlines_name_the_phase_the_time_and_whether_a_turn_may_run(
    phase: Phase, seconds: float, message: str, execution: str
) -> None:
    error = deadline_exceeded(phase, seconds)
    assert (error.code, error.message) == (INTERNAL_ERROR, message)
    assert error.data == _failure("deadlineExceeded", "adapter", True, phase, execution=execution)


PHASE_WORDS = {
    "starting": "starting the Muse host",
    "handshake": "completing the handshake with the Muse host",
    "preparing": "preparing the Muse session",
    "submitting": "submitting the turn to Muse",
    "running": "running the turn",
    "answering": "handing your answer to the running turn",
    "steering": "handing a correction to the running turn",
    "cancelling": "cancelling the turn",
    "reading": "reading the session from Muse",
    "authenticating": "checking which credential Muse uses",
    "deleting": "deleting the session in Muse",
}


def test_every_phase_is_named_in_words() -> None:
    assert set(PHASE_WORDS) == set(get_args(Phase))


@pytest.mark.parametrize(("phase", "words"), PHASE_WORDS.items())
def test_failures_name_the_phase_in_words(phase: Phase, words: str) -> None:
    deadline = deadline_exceeded(phase, 1).message
    assert deadline.startswith(f"Muse did not respond in time: {words} took longer than 1 s.")
    exited = host_exited(phase, 0, "").message
    assert exited.startswith(f"The Muse host exited with exit code 0 while {words}.")


AGAIN = "Send the prompt again; muse-acp starts a new Muse host for this session."


@pytest.mark.parametrize(
    ("phase", "exit_code", "stderr", "message", "execution"),
    [
        pytest.param(
            "running",
            3,
            "starting\nerror: provider refused the key\n\n",
            "The Muse host exited with exit code 3 while running the turn. Its last output "
            f"line was: error: provider refused the key. {AGAIN}",
            "possiblySubmitted",
            id="last stderr line quoted",
        ),
        pytest.param(
            "handshake",
            None,
            "",
            "The Muse host exited without an exit status while completing the handshake with "
            f"the Muse host. {AGAIN}",
            "notSubmitted",
            id="no status and no stderr",
        ),
        pytest.param(
            "running",
            1,
            "panic: token=abc Bearer sk-secret-value",
            "The Muse host exited with exit code 1 while running the turn. Its last output "
            f"line was: panic: token=abc Bearer [redacted]. {AGAIN}",
            "possiblySubmitted",
            id="stderr is redacted",
        ),
    ],
)
def test_host_exit_names_the_phase_and_says_the_next_prompt_starts_a_new_host(
    phase: Phase, exit_code: int | None, stderr: str, message: str, execution: str
) -> None:
    error = host_exited(phase, exit_code, stderr)
    assert (error.code, error.message) == (INTERNAL_ERROR, message)
    assert error.data == _failure("hostExited", "host", True, phase, execution=execution)


@pytest.mark.parametrize("phase", ["reading", "authenticating"])
def test_host_exit_outside_a_prompt_says_to_send_the_request_again(phase: Phase) -> None:
    message = host_exited(phase, 1, "").message
    assert message.endswith("Send the request again; muse-acp starts a new Muse host for it.")
    assert "session/load" not in message


def test_host_exit_quotes_at_most_a_short_last_line() -> None:
    error = host_exited("running", 2, "early detail\n" + "y" * 5000)
    assert "early detail" not in error.message
    assert len(error.message) < 400


def test_host_rejection_quotes_the_method_code_and_message() -> None:
    error = host_rejected(
        "approval/decide", RpcError(-32053, "approval apr-1 requirement is stale"), "running"
    )
    assert error.code == INTERNAL_ERROR
    assert error.message == (
        "Muse refused the approval/decide request (MSP error -32053): approval apr-1 "
        f"requirement is stale. {INSPECT_HINT}"
    )
    assert error.data == _failure(
        "hostRejected", "host", False, "running", execution="possiblySubmitted"
    )


def test_host_rejection_before_submission_says_nothing_ran() -> None:
    error = host_rejected("session/open", RpcError(-32602, ""), "preparing")
    assert error.message.startswith(
        "Muse refused the session/open request (MSP error -32602): It gave no reason."
    )
    assert error.data == _failure(
        "hostRejected", "host", False, "preparing", execution="notSubmitted"
    )


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            "approve",
            "This session's mode answers approvals automatically (approve), but Muse offered no "
            "one-time allow choice for this action, so the turn was stopped without answering. "
            "Switch the session to the Ask mode to decide such approvals yourself.",
        ),
        (
            "reject",
            "This session's mode answers approvals automatically (reject), but Muse offered no "
            "one-time deny choice for this action, so the turn was stopped without answering. "
            "Switch the session to the Ask mode to decide such approvals yourself.",
        ),
    ],
)
def test_automatic_decisions_that_muse_does_not_allow_stop_the_turn(
    policy: Any, message: str
) -> None:
    error = automatic_unavailable(policy)
    assert (error.code, error.message) == (INTERNAL_ERROR, message)
    assert error.data == _failure(
        "automaticDecisionUnavailable", "adapter", False, "running", execution="possiblySubmitted"
    )


def test_questions_without_form_elicitation_explain_a_failed_turn() -> None:
    error = user_input_unsupported()
    assert (error.code, error.message) == (
        INTERNAL_ERROR,
        "Muse asked a question that needs an answer, but this ACP client did not advertise "
        "form elicitation, so the question was withdrawn and Muse then ended the turn. Use a "
        "client that supports elicitation forms to answer Muse's questions.",
    )
    assert error.data == _failure(
        "userInputUnsupported", "client", False, "running", execution="possiblySubmitted"
    )


def test_permission_failures_give_their_reason() -> None:
    error = client_answer_failed("permission", "the client answered with error -32603")
    assert (error.code, error.message) == (
        INTERNAL_ERROR,
        "No permission decision could be obtained from the client: the client answered with "
        "error -32603. The turn was stopped without granting permission; send the prompt "
        "again to retry.",
    )
    assert error.data == _failure(
        "permissionFailed", "client", True, "running", execution="possiblySubmitted"
    )


def test_failure_messages_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-abcdef-123")
    error = Failure("x", "adapter", retryable=False, phase="running").error("saw tok-abcdef-123")
    assert error.message == "saw [redacted]"
    assert (
        client_answer_failed("permission", "sent tok-abcdef-123").message.count("[redacted]") == 1
    )
    assert "tok-abcdef" not in host_rejected("m", RpcError(1, "tok-abcdef-123"), "running").message


def test_question_failures_say_question_and_name_the_client() -> None:
    error = client_answer_failed("question", "the client answered with error -32603")
    assert error.message.startswith(
        "No usable answer to Muse's question could be obtained from the client: the client "
        "answered with error -32603. The question was withdrawn from Muse"
    )
    assert "permission" not in error.message
    assert error.data == _failure("questionFailed", "client", True, "running")


def test_a_host_rejection_keeps_the_hosts_error_kind() -> None:
    refused = host_rejected(
        "approval/decide",
        RpcError(-32053, "stale", {"kind": "approvalRequirementStale"}),
        "answering",
    )
    assert refused.host_kind == "approvalRequirementStale"
    assert host_rejected("m", RpcError(-32021, "held"), "starting").host_kind == "sessionInUse"


def test_a_session_held_elsewhere_names_the_method_sent_and_that_nothing_ran() -> None:
    error = session_in_use("session/resume", "s-1")
    assert "session/resume" in error.message
    assert "session/start" not in error.message
    assert error.data == _failure("sessionInUse", "host", True, "starting")
