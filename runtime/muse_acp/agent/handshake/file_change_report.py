"""JetBrains AIR ``agentFileChangeReport`` v1: which files a prompt's turn changed.

Contract: everything here is pure; ``prompting.handle_prompt`` sends what it builds, and every
``_meta`` shape goes through its generated ``Jetbrains*`` model. The client's opt-in and its
advertisement are negotiated at ``initialize`` (``capabilities``, which does not load this
module's ACP models). On a connection that negotiated it, ``requested`` reads a prompt's
request, checked before the prompt is admitted (INVALID_PARAMS when malformed); an admitted
prompt that asked gets exactly one report after its turn settled: ``unavailable``/``cancelled``
for a cancelled prompt, else the sorted paths (at most ``PATHS_LIMIT``) that the turn's editing
tools completed on (``TurnCards.edited_paths``). ``declaredComplete`` is always false;
``uncertainty`` says what the list may miss. docs/muse-extensions.md describes the wire shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from annotated_types import MaxLen
from pydantic import BaseModel, ValidationError

from muse_acp.rpc import INVALID_PARAMS, RpcError, describe_validation_error
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp

__all__ = [
    "PATHS_LIMIT",
    "UNCERTAINTY",
    "report",
    "requested",
]


def _max_items(model: type[BaseModel], member: str) -> int:
    bounds = [m.max_length for m in model.model_fields[member].metadata if isinstance(m, MaxLen)]
    if len(bounds) != 1:
        raise TypeError(f"{model.__name__}.{member} has no single maximum length")
    return bounds[0]


PATHS_LIMIT: Final = _max_items(acp.JetbrainsFileChangesReported, "paths")
"""Most paths one report lists, as the extension schema bounds it."""

UNCERTAINTY: Final = (
    "Lists only files named by completed write_file and edit_file calls; files changed by shell "
    "commands, subagents, workflows or other tools are not included, and a listed file may be "
    "unchanged if the tool left it as it was."
)

_REQUEST_HINT: Final = (
    "; agentFileChangeReportRequest must be exactly {version: 1, requestId} where requestId is "
    "1 to 128 ASCII letters, digits, dots, underscores, colons or hyphens"
)


def requested(negotiated: bool, meta: Mapping[str, JsonValue] | None) -> str | None:
    """The ``requestId`` a prompt's ``_meta`` asks a report for, or None.

    Raises:
        RpcError: INVALID_PARAMS for a request of any shape but ``{version: 1, requestId}``.
    """
    jetbrains = meta.get("jetbrains") if negotiated and meta else None
    air = jetbrains.get("air") if isinstance(jetbrains, dict) else None
    if not isinstance(air, dict) or "agentFileChangeReportRequest" not in air:
        return None
    raw = air["agentFileChangeReportRequest"]
    if not isinstance(raw, dict):
        raise _refused("it is not an object")
    try:
        # Strict, and the model forbids members besides the two.
        request = acp.JetbrainsFileChangeReportRequest.model_validate(
            raw, strict=True, by_alias=True, by_name=False
        )
    except ValidationError as error:
        raise _refused(describe_validation_error(error, raw)) from None
    if isinstance(raw.get("version"), bool):  # true == 1 to a Literal
        raise _refused("version is not an integer")
    return request.request_id


def _refused(detail: str) -> RpcError:
    return RpcError(
        INVALID_PARAMS, f"_meta.jetbrains.air.agentFileChangeReportRequest: {detail}{_REQUEST_HINT}"
    )


def report(
    request_id: str, paths: Iterable[str], *, cancelled: bool
) -> acp.SessionInfoUpdateSessionUpdate:
    """The one ``session_info_update`` answering request ``request_id``: the ``paths`` the
    turn's editing tools changed, or ``unavailable`` when the prompt was ``cancelled``."""
    answer: acp.JetbrainsFileChangesReported | acp.JetbrainsFileChangesUnavailable
    if cancelled:
        answer = acp.JetbrainsFileChangesUnavailable(
            version=1, request_id=request_id, status="unavailable", reason="cancelled"
        )
    else:
        listed = sorted(set(paths))
        answer = acp.JetbrainsFileChangesReported(
            version=1,
            request_id=request_id,
            status="reported",
            paths=listed[:PATHS_LIMIT],
            declared_complete=False,
            truncated=len(listed) > PATHS_LIMIT,
            uncertainty=UNCERTAINTY,
        )
    meta = acp.JetbrainsSessionInfoMeta(
        jetbrains=acp.JetbrainsSessionInfo(
            air=acp.JetbrainsAirSessionInfo(version=1, agent_file_change_report=answer)
        )
    )
    return acp.SessionInfoUpdateSessionUpdate(
        session_update="session_info_update",
        field_meta=meta.model_dump(mode="json", by_alias=True, exclude_unset=True),
    )
