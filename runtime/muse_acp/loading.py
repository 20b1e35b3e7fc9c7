"""How muse-acp's long-running executables load their runtime: quickly.

Contract: ``begin_loading()`` is called by ``muse-acp serve`` and ``muse-sim serve`` before they
import their runtime: it pauses the cyclic garbage collector and tells pydantic, inside this
process only, that no plugins are installed (muse-acp's models are not meant to be instrumented):
before pydantic imports its plugin loader, one that finds none stands in for it, so the scan's
own imports (``importlib.metadata``) are not loaded either.
``end_loading()`` is called once the runtime is imported: what was loaded lives as long as the
process, so it is frozen out of the collector's sight and the collector resumes; calling it
without ``begin_loading``, or twice, is harmless. Libraries never call these, so a program that
imports the client library or the simulator keeps its own settings. docs/performance.md says why.
"""

from __future__ import annotations

import gc
import sys
from types import ModuleType

__all__ = ["begin_loading", "end_loading"]


def begin_loading() -> None:
    """Pause the collector and skip pydantic's plugin scan (see the module contract)."""
    gc.disable()
    loader = sys.modules.get(_PLUGIN_LOADER)
    if loader is None:
        # pydantic imports its plugin loader when it builds its first validator, and only to
        # call ``get_plugins``; the real one imports ``importlib.metadata`` (email, zipfile,
        # csv: a tenth of a start) to scan entry points this process does not want scanned.
        sys.modules[_PLUGIN_LOADER] = _no_plugins_loader()
    elif getattr(loader, "_plugins", ()) is None:
        # Already imported: an empty table is the state it reaches when none is installed.
        setattr(loader, "_plugins", {})  # noqa: B010 (a module's global, not a known member)


_PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugins_loader() -> ModuleType:
    """A plugin loader for pydantic that finds no plugin (what its own finds with none)."""
    module = ModuleType(_PLUGIN_LOADER, "pydantic's plugin loader, with no plugin to load")

    def get_plugins() -> tuple[()]:
        return ()

    module.get_plugins = get_plugins  # type: ignore[attr-defined]
    module._plugins = {}  # type: ignore[attr-defined]
    return module


def end_loading() -> None:
    """Freeze what loading created and resume the collector."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
