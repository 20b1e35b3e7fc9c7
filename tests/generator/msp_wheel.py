"""A synthetic muse-code-msp wheel for the ingest tests: a zip holding a declarations module in
the shape of the official one, so the facts a bundle must carry are known exactly."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

VERSION = "9.8.7"
FINGERPRINT = "sha256:" + "ab" * 32
DOC_TEXT = "WORDING-OF-THE-RELEASE"

MODULE = f'''# GENERATED -- DO NOT EDIT.
"""Synthetic declarations. {DOC_TEXT}"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

SCHEMA_FINGERPRINT: Final[str] = "{FINGERPRINT}"
SCHEMA_VERSION: Final[int] = 1
EXPERIMENTAL: Final[bool] = False
REQUIRED_HOST_VERSION: Final[str] = "{VERSION}"

# {DOC_TEXT}
TurnStatus = str  # open enum: unknown values stay representable
TURN_STATUS_KNOWN_VALUES: Final[tuple[str, ...]] = ("running", "done",)

IfBusy = Literal["queue", "steer"]

RequestId = int | str

class _TurnStartParamsBase(TypedDict):
    commandId: str
    sessionId: str


class TurnStartParams(_TurnStartParamsBase, total=False):
    """{DOC_TEXT}"""

    ifBusy: IfBusy
    note: str | None


class TurnStartResult(TypedDict):
    status: TurnStatus
    turnIds: list[str]
    meta: dict[str, Any]


class Empty(TypedDict, total=False):
    hint: str


PageParams = TypedDict("PageParams", {{
    "from": "int",
    "limit": "int | None",
}}, total=False)


class ApprovalRequestParams(TypedDict):
    approvalId: str
    requestId: RequestId


class RequestReceipt(TypedDict):
    received: bool


class MethodSpec(TypedDict):
    description: str
    params: str | None
    result: str | None


class NotificationSpec(TypedDict):
    description: str
    params: str | None


class ErrorSpec(TypedDict):
    code: int
    kind: str
    retryable: bool
    overrideKinds: tuple[str, ...]


METHODS: Final[dict[str, MethodSpec]] = {{
    "turn/start": {{
        "description": "{DOC_TEXT}", "params": "TurnStartParams", "result": "TurnStartResult"
    }},
    "ping/read": {{"description": "{DOC_TEXT}", "params": "PageParams", "result": "Empty"}},
}}

NOTIFICATIONS: Final[dict[str, NotificationSpec]] = {{
    "initialized": {{"description": "{DOC_TEXT}", "params": None}},
    "approval/requested": {{"description": "{DOC_TEXT}", "params": "ApprovalRequestParams"}},
}}

ERRORS: Final[tuple[ErrorSpec, ...]] = (
    {{
        "code": -32602, "kind": "invalidParams", "retryable": False,
        "overrideKinds": ("experimentalRequired",),
    }},
    {{"code": -32001, "kind": "overloaded", "retryable": True, "overrideKinds": ()}},
)

GRANTABLE_CAPABILITIES: Final[tuple[str, ...]] = ("userShell",)
'''


EXPERIMENTAL_FINGERPRINT = "sha256:" + "e1" * 32
EXPERIMENTAL_MODULE = MODULE.replace(FINGERPRINT, EXPERIMENTAL_FINGERPRINT).replace(
    '"ping/read"', '"secret/read"'
)


def write_wheel(
    tmp_path: Path,
    source: str = MODULE,
    version: str = VERSION,
    experimental: str | None = EXPERIMENTAL_MODULE,
) -> Path:
    wheel = tmp_path / "wheels" / f"muse_code_msp-{version}-py3-none-any.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(zipfile.ZipInfo("muse_code_msp/__init__.py"), source)
        if experimental is not None:
            member = "muse_code_msp/experimental/__init__.py"
            archive.writestr(zipfile.ZipInfo(member), experimental)
    return wheel


def read_bundle(spec: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        (spec / "msp" / VERSION / "msp.schema.json").read_text(encoding="utf-8")
    )
    return result
