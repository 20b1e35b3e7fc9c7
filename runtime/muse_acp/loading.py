"""How muse-acp's long-running executables load their runtime: quickly.

Contract: ``begin_loading()`` is called by ``muse-acp serve`` and ``muse-sim serve`` before they
import their runtime: it pauses the cyclic garbage collector and tells pydantic, inside this
process only, that no plugins are installed (muse-acp's models are not meant to be instrumented).
``end_loading()`` is called once the runtime is imported: what was loaded lives as long as the
process, so it is frozen out of the collector's sight and the collector resumes; calling it
without ``begin_loading``, or twice, is harmless. Libraries never call these, so a program that
imports the client library or the simulator keeps its own settings. docs/performance.md says why.
"""

from __future__ import annotations

import gc

__all__ = ["begin_loading", "end_loading"]


def begin_loading() -> None:
    """Pause the collector and skip pydantic's plugin scan (see the module contract)."""
    gc.disable()
    from pydantic.plugin import _loader

    # pydantic reads its plugins once, when ``_plugins`` is None; an empty table is the state it
    # reaches when none is installed.
    if _loader._plugins is None:
        _loader._plugins = {}


def end_loading() -> None:
    """Freeze what loading created and resume the collector."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
