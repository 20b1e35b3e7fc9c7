"""The one place that turns a failed or interrupted turn into an ACP stop reason or error.

Contract: a turn either ends with a ``StopReason`` or fails with an ``RpcError`` whose ``data``
is an ``acp.MuseFailureData`` (the extension schema's ``{"failure": {...}}``): ``kind`` (the
host's error kind, or one of the adapter's kinds below), ``source`` (who failed: ``provider``,
``host``, ``adapter`` or ``client``), ``retryable`` (sending the request again may succeed
without other changes), ``phase`` (what the adapter was doing) and ``execution`` (whether a
model turn may have been handed to Muse; it follows from the phase). Every message, and the
kind, is passed through ``redact`` and bounded, so host text never carries a secret onto the
wire. All functions here are pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeAlias

from muse_acp.agent.errors.workspace import QUOTED_PATH_LIMIT
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.bindings import error_kind
from muse_acp.redact import redact
from muse_acp.rpc.errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    RpcError,
)
from muse_acp.rpc.jsonvalue import JsonObject
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "Execution",
    "Failure",
    "FailureSource",
    "HostRefusal",
    "ModelRefusal",
    "Phase",
    "credential_not_chosen",
    "deadline_exceeded",
    "handshake_incomplete",
    "host_exited",
    "host_rejected",
    "host_request_unanswerable",
    "host_silent",
    "model_refused",
    "sentence",
    "session_in_use",
    "settings_overlay_failed",
    "signed_out",
    "start_failed",
    "stop_reason",
    "too_many_early_events",
]

Phase: TypeAlias = acp.MuseFailurePhase
FailureSource: TypeAlias = acp.MuseFailureSource
Execution: TypeAlias = acp.MuseExecution

HOST_TEXT_LIMIT: Final = 1000
"""Longest piece of host-written text (an error message) quoted in a failure message."""
STDERR_LINE_LIMIT: Final = 200
"""Longest stderr line quoted when the host exits."""
KIND_LIMIT: Final = 100
"""Longest failure kind carried in ``data.failure.kind``."""


@dataclass(frozen=True, slots=True)
class Failure:
    """The structured description of a failed turn carried in ``error.data.failure``."""

    kind: str
    source: FailureSource
    retryable: bool
    phase: Phase

    @property
    def execution(self) -> Execution:
        return "notSubmitted" if self.phase in _BEFORE_SUBMISSION else "possiblySubmitted"

    def data(self) -> JsonObject:
        """Return ``{"failure": {...}}`` as the extension schema's ``MuseFailureData``."""
        data = acp.MuseFailureData(
            failure=acp.MuseFailure(
                # The host names the kind, so it is host text like any message: redacted,
                # bounded.
                kind=redact(self.kind, limit=KIND_LIMIT) or "unspecified",
                source=self.source,
                retryable=self.retryable,
                phase=self.phase,
                execution=self.execution,
            )
        )
        dumped: JsonObject = data.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    def error(self, message: str, code: int = INTERNAL_ERROR) -> RpcError:
        """Return the ``RpcError`` for this failure with ``message`` redacted."""
        return RpcError(code, redact(message), self.data())


_COMPLETED_STOP_REASONS: Final[MappingProxyType[str, acp.StopReason]] = MappingProxyType(
    {"completed": "end_turn", "cancelled": "cancelled", "interrupted": "cancelled"}
)

_AUTH_HINT: Final = (
    "Log in to Muse (run `muse login`) or set META_API_KEY in the adapter's environment, "
    "then send the prompt again."
)
_SETTINGS_HINT: Final = (
    "Check the session's model and provider settings and that the workspace is usable, "
    "then send the prompt again."
)
_INSPECT_HINT: Final = (
    "Look over the session's history for what went wrong, then send the prompt again."
)
_RECOVERY_HINTS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "authRequired": _AUTH_HINT,
        "configError": _SETTINGS_HINT,
        "environmentError": _SETTINGS_HINT,
    }
)
_PROVIDER_KINDS: Final = frozenset({"modelError", "authRequired"})

_PHASE_WORDS: Final[MappingProxyType[Phase, str]] = MappingProxyType(
    {
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
)
# Advice for phases that are not about a prompt, in place of the prompt's.
_PHASE_HINTS: Final[MappingProxyType[Phase, str]] = MappingProxyType(
    {"deleting": "List the sessions to see whether it is still there before deleting it again."}
)
# What follows a host exit: a prompt's next try (or a request's) gets a new host (``prompting``).
_REQUEST_PHASES: Final[frozenset[Phase]] = frozenset({"reading", "authenticating", "deleting"})
_PROMPT_AGAIN: Final = "Send the prompt again; muse-acp starts a new Muse host for this session."
_REQUEST_AGAIN: Final = "Send the request again; muse-acp starts a new Muse host for it."
# Phases that end before a turn is handed to the host: a failure there cannot have run a model.
_BEFORE_SUBMISSION: Final[frozenset[Phase]] = frozenset(
    {"starting", "handshake", "preparing", "reading", "authenticating", "deleting"}
)


def sentence(text: str, limit: int = HOST_TEXT_LIMIT) -> str:
    """``text`` bounded and ending as a sentence (host or client text quoted in a message)."""
    text = clip(text.strip(), limit)
    return text if text.endswith((".", "!", "?")) else f"{text}."


def stop_reason(params: msp.TurnCompletedParams) -> acp.StopReason | RpcError:
    """Map the host's ``turn/completed`` to the prompt's stop reason, or to the turn's error.

    A step-limit failure is a normal stop (``max_turn_requests``); other failures are errors
    with ``phase`` ``running``. An unknown ``terminal`` value is treated as a failure of kind
    ``unknownTerminal`` rather than guessed at.
    """
    known = _COMPLETED_STOP_REASONS.get(params.terminal)
    if known is not None:
        return known
    error = params.error
    if params.terminal != "failed":
        failure = Failure("unknownTerminal", "host", retryable=False, phase="running")
        detail = f"it reported an outcome this adapter does not know ({params.terminal!r})"
        return failure.error(f"Muse could not finish the turn: {sentence(detail)} {_INSPECT_HINT}")
    if error is not None and error.kind == "stepLimit":
        return "max_turn_requests"
    kind = "unspecified" if error is None else error.kind
    failure = Failure(
        kind,
        "provider" if kind in _PROVIDER_KINDS else "host",
        retryable=False if error is None else error.retryable,
        phase="running",
    )
    detail = error.message if error is not None else params.reason or "Muse gave no reason"
    hint = _RECOVERY_HINTS.get(kind, _INSPECT_HINT)
    code = AUTH_REQUIRED if kind == "authRequired" else INTERNAL_ERROR
    return failure.error(f"Muse could not finish the turn: {sentence(detail)} {hint}", code)


def deadline_exceeded(phase: Phase, seconds: float) -> RpcError:
    """The adapter stopped waiting for the host in ``phase`` after ``seconds``."""
    failure = Failure("deadlineExceeded", "adapter", retryable=True, phase=phase)
    if phase in _PHASE_HINTS:
        consequence = _PHASE_HINTS[phase]
    elif failure.execution == "possiblySubmitted":
        consequence = (
            "A model turn may already have been submitted and may still run in Muse; look at "
            "the session's history before sending the prompt again."
        )
    else:
        consequence = (
            "No model turn was submitted, so sending the prompt again is safe once the host "
            "responds."
        )
    return failure.error(
        f"Muse did not respond in time: {_PHASE_WORDS[phase]} took longer than "
        f"{seconds:g} s. {consequence}"
    )


def host_silent(seconds: float) -> RpcError:
    """The host sent nothing for ``seconds`` while the turn ran and nobody waited on the client."""
    failure = Failure("hostSilent", "host", retryable=True, phase="running")
    return failure.error(
        f"Muse went silent: nothing came from it for {seconds:g} s while the turn ran, so the "
        "turn was stopped and the host will be replaced. The model may have done part of the "
        "work; look at the session's history, then send the prompt again (raise "
        "MUSE_ACP_SILENCE_TIMEOUT if Muse's tools often work this long without output)."
    )


def host_request_unanswerable(method: str) -> RpcError:
    """The host asked muse-acp something it cannot answer (a request method it does not
    handle), so the turn would wait on an answer that never comes."""
    failure = Failure("hostRequestUnanswerable", "host", retryable=True, phase="running")
    return failure.error(
        f"Muse asked muse-acp for {redact(clip(method, 100))!r}, which this version of muse-acp "
        "cannot answer, so the turn was stopped instead of waiting on it and the host will be "
        "replaced. Send the prompt again; if it keeps happening, update muse-acp or use a Muse "
        "version it supports."
    )


def _last_line(stderr_tail: str) -> str | None:
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    return sentence(redact(lines[-1]), STDERR_LINE_LIMIT) if lines else None


def host_exited(phase: Phase, exit_code: int | None, stderr_tail: str) -> RpcError:
    """The host process ended while the adapter was in ``phase``.

    Only the last non-empty stderr line is quoted, redacted and cut to 200 characters: a host
    that dies usually states why on its final line, and the user needs that reason to recover,
    while the rest of stderr may hold workspace content and belongs in the adapter's log only.
    """
    failure = Failure("hostExited", "host", retryable=True, phase=phase)
    status = "without an exit status" if exit_code is None else f"with exit code {exit_code}"
    message = f"The Muse host exited {status} while {_PHASE_WORDS[phase]}."
    line = _last_line(stderr_tail)
    if line is not None:
        message += f" Its last output line was: {line}"
    message += " " + _PHASE_HINTS.get(
        phase, _REQUEST_AGAIN if phase in _REQUEST_PHASES else _PROMPT_AGAIN
    )
    return failure.error(message)


class HostRefusal(RpcError):
    """The ACP failure for a request the host refused, keeping the host's own error kind."""

    def __init__(self, failure: RpcError, host_kind: str | None) -> None:
        super().__init__(failure.code, failure.message, failure.data)
        self.host_kind = host_kind


def host_rejected(method: str, error: RpcError, phase: Phase) -> HostRefusal:
    """The host answered the adapter's ``method`` request with an MSP error."""
    kind = error_kind(error)
    if kind == "notInitialized":
        return HostRefusal(handshake_incomplete(method), kind)
    failure = Failure("hostRejected", "host", retryable=False, phase=phase)
    detail = sentence(error.message) if error.message.strip() else "It gave no reason."
    return HostRefusal(
        failure.error(
            f"Muse refused the {clip(method, 100)} request (MSP error {error.code}): {detail} "
            f"{_PHASE_HINTS.get(phase, _INSPECT_HINT)}"
        ),
        kind,
    )


class ModelRefusal(RpcError):
    """The host refused the model the user picked (see ``model_refused``)."""


def model_refused(model: str, kept: str, error: RpcError) -> ModelRefusal:
    """The host refused the model the user picked; the previous choice (``kept``) stays."""
    failure = Failure("modelRefused", "host", retryable=False, phase="preparing")
    detail = sentence(error.message) if error.message.strip() else "It gave no reason."
    refused = failure.error(
        f"Muse refused the model {clip(model, 100)!r}: {detail} The session keeps {kept}; pick "
        "another model from the menu (send /models to refresh it).",
        INVALID_PARAMS,
    )
    return ModelRefusal(refused.code, refused.message, refused.data)


def handshake_incomplete(method: str) -> RpcError:
    """The host answered ``initialize`` but refuses work as if the handshake never finished
    (it ignored the ``initialized`` notification, as some 1.3.0 hosts do): nothing ran."""
    failure = Failure("handshakeIncomplete", "host", retryable=False, phase="starting")
    return failure.error(
        f"This Muse host did not complete the handshake: it accepted initialize but then "
        f"refused {clip(method, 100)} as if it had never been initialized, so nothing was sent "
        "to the model. Update Muse (some 1.3.0 builds drop the `initialized` notification), "
        "and run `muse-acp doctor` to check the host."
    )


def signed_out() -> RpcError:
    """Muse reports no credential (MSP ``account/read``: ``loggedOut``) and needs one."""
    failure = Failure("authRequired", "host", retryable=False, phase="authenticating")
    return failure.error(
        "Muse is not signed in: it reports no credential, and its provider needs one. Run "
        "`muse login` in a terminal, or export META_API_KEY in the environment the client starts "
        "muse-acp in and restart the agent; then authenticate again.",
        AUTH_REQUIRED,
    )


def credential_not_chosen(found: str) -> RpcError:
    """The client chose META_API_KEY, but Muse reports that it uses ``found`` instead."""
    failure = Failure("credentialNotUsed", "host", retryable=False, phase="authenticating")
    return failure.error(
        f"META_API_KEY is exported, but Muse reports that it uses {found}, not the key. "
        "Choose the Muse account method to go on with that, or make sure the key reaches Muse "
        "and no stored credential takes its place (`muse logout` removes one).",
        AUTH_REQUIRED,
    )


def session_in_use(method: str, session_id: str) -> RpcError:
    """Another Muse host process holds the session's lease (MSP ``sessionInUse``)."""
    failure = Failure("sessionInUse", "host", retryable=True, phase="starting")
    return failure.error(
        f"Muse could not open session {clip(session_id, 100)}: another Muse host process holds "
        f"it (MSP sessionInUse, answering {method}). Nothing was submitted. Close the session "
        "where it is open (another editor window, muse-acp or `muse` process), then send the "
        "prompt again."
    )


def too_many_early_events(limit: int, method: str) -> RpcError:
    """The host sent over ``limit`` events before saying which turn they belong to."""
    failure = Failure("hostProtocolError", "host", retryable=True, phase="submitting")
    return failure.error(
        f"Muse sent more than {limit} events (the last a {clip(method, 100)}) before saying "
        "which turn they belong to, so the turn was stopped. Send the prompt again; if this "
        "repeats, check the Muse host version."
    )


def settings_overlay_failed(problem: str) -> RpcError:
    """The private settings file carrying the session's MCP servers to Muse could not be made
    (``problem`` says why and what to do); no host was started."""
    failure = Failure("mcpOverlayFailed", "adapter", retryable=False, phase="starting")
    return failure.error(
        f"muse-acp could not prepare this session's MCP servers for Muse: {problem} Nothing was "
        "sent to the model; fix that, or remove the MCP servers from the session, then send the "
        "prompt again."
    )


def start_failed(cwd: str, error: OSError) -> RpcError:
    """Muse could not be started in ``cwd``: ``error`` came from entering that folder (which
    was removed or replaced after the session began: the workspace's fault, not Muse's) or
    from the executable (``HostUnavailable``)."""
    if error.filename != cwd:
        return HostUnavailable(
            f"the Muse executable could not be started ({error.strerror or error}); check "
            "that it runs, or point MUSE_ACP_MUSE_BIN at one that does"
        )
    failure = Failure("workspaceUnavailable", "client", retryable=False, phase="starting")
    why = f"cannot be entered ({error.strerror or error})"
    if isinstance(error, FileNotFoundError | NotADirectoryError):
        gone = "no longer exists" if isinstance(error, FileNotFoundError) else "is not a folder"
        why = f"{gone} (it was removed or replaced after the session began)"
    return failure.error(
        f"The session's workspace folder {clip(cwd, QUOTED_PATH_LIMIT)} {why}, so Muse cannot be "
        "started in it. Recreate the folder, or open a new session in a folder that exists.",
        RESOURCE_NOT_FOUND,
    )
