"""Comparing the shape of a simulator frame with a recorded one.

``compare`` checks that a live frame has the members of its recorded counterpart, and (for
real host logs) in the same order, recursing into members both have; objects of different
variants (a different ``kind`` or ``method``) are not compared. Members in ``CONTENT_MEMBERS``
depend on the content of an exchange rather than on its shape and may be missing on either
side. ``kind_key`` says which recorded frame a live one corresponds to, and ``ids_in`` finds
the identifiers a frame carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

ID: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|call_[0-9a-f]{32}|v:[0-9a-f-]{36}:[0-9]+(?:\.[0-9]+)?"
)

CONTENT_MEMBERS: Final = frozenset(
    {
        # Present only when there is something to say.
        "finishReason",
        "reason",
        "error",
        "timeToFirstTokenMs",
        "truncated",
        "visibleOutput",
        "failureReason",
        "approvalId",
        "amendment",
        "decidedAt",
        "displayText",
        "attachments",
        "steered",
        "retracted",
        "noneReason",
        "description",
        "title",
        "header",
        "taskId",
        # Token accounting that recordings include or omit by host and step.
        "usage",
        "durationMs",
        # Stored output is referenced only when a tool has output worth storing.
        "outputRef",
        # Error details that depend on which error it is.
        "retryable",
        "descriptor",
        "sessionId",
        "commandId",
        "lastTurnId",
        "limitBytes",
    }
)
"""Members whose presence depends on the content of the exchange, not on its shape."""


def kind_key(message: Mapping[str, Any]) -> str:
    """What pairs a host frame with a recorded one: method (and item kind), or ``response``."""
    method = message.get("method")
    if method is None:
        return "response"
    params = message.get("params")
    item = params.get("item") if isinstance(params, dict) else None
    if isinstance(item, dict):
        return f"{method} {item.get('kind')}"
    return str(method) if "id" not in message else f"request {method}"


def ids_in(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value} if ID.fullmatch(value) else set()
    if isinstance(value, dict):
        return set().union(*(ids_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(ids_in(v) for v in value)) if value else set()
    return set()


def same_variant(live: dict[str, Any], recorded: dict[str, Any]) -> bool:
    """Whether two objects are the same variant (same ``kind``, same ``method``)."""
    return all(
        live[tag] == recorded[tag] for tag in ("kind", "method") if tag in live and tag in recorded
    )


def compare(live: Any, recorded: Any, *, ordered: bool, where: str, failures: list[str]) -> None:
    """Fail when ``live`` does not have ``recorded``'s members (see the module docstring)."""
    if isinstance(live, dict) and isinstance(recorded, dict):
        if not same_variant(live, recorded):
            return
        missing = [k for k in recorded if k not in live and k not in CONTENT_MEMBERS]
        extra = [k for k in live if k not in recorded and k not in CONTENT_MEMBERS]
        if missing or extra:
            failures.append(f"{where}: missing {missing}, unexpected {extra}")
        if ordered:
            common_live = [k for k in live if k in recorded]
            common_recorded = [k for k in recorded if k in live]
            if common_live != common_recorded:
                failures.append(f"{where}: member order {common_live} != {common_recorded}")
        for key in live:
            if key in recorded:
                compare(
                    live[key],
                    recorded[key],
                    ordered=ordered,
                    where=f"{where}.{key}",
                    failures=failures,
                )
    elif isinstance(live, list) and isinstance(recorded, list) and live and recorded:
        compare(live[0], recorded[0], ordered=ordered, where=f"{where}[0]", failures=failures)
