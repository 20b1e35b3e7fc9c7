"""The event loop ``muse-acp serve`` runs on.

Contract: ``backend_options(setting)`` gives the options of ``anyio.run``'s asyncio backend for
serving: uvloop's loop when the setting is ``auto`` and uvloop imports (it is a dependency
wherever it is built: CPython outside Windows), the standard library's otherwise. ``loop_name()``
names the loop running the calling task, for the log. Why uvloop: a relay's work is mostly the
loop's own (a wake-up, a read, a write per frame), and uvloop runs that part in C; measured
side by side, the adapter spends less CPU per turn and the first words of a reply come sooner
(docs/performance.md). ``asyncio`` is there for a machine where uvloop misbehaves.
"""

from __future__ import annotations

import asyncio

from muse_acp.config import EventLoopSetting

__all__ = ["backend_options", "loop_name"]


def backend_options(setting: EventLoopSetting) -> dict[str, object]:
    """``anyio.run``'s ``backend_options`` for serving with ``setting`` (see the contract)."""
    if setting == "asyncio":
        return {}
    try:
        import uvloop  # noqa: F401 (imported to see that it can be)
    except ImportError:
        return {}
    return {"use_uvloop": True}


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: whose event loop runs the calling task."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
