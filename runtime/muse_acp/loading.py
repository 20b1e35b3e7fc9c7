"""How muse-acp's long-running executables load their runtime: quickly.

Contract:

* ``begin_loading()`` is called by ``muse-acp serve`` and ``muse-sim serve`` before they
  import their runtime. It pauses the cyclic garbage collector, which would otherwise rescan
  the tens of thousands of objects that creating the wire models leaves behind, many times
  over, while finding nothing to free. And it tells pydantic that no pydantic plugins are
  installed, so that the first model built does not read the entry points of every
  distribution in the environment (a tenth of a second in a full virtual environment, paid at
  every start of the agent and of every host). muse-acp's models are not meant to be
  instrumented by third-party plugins. The switch is made inside the process only: the
  environment that Muse hosts, and the MCP servers they start, inherit is not touched.
* ``end_loading()`` is called once the runtime is imported. Everything loaded so far lives as
  long as the process, so it is moved out of the collector's sight (``gc.freeze``), and the
  collector resumes. Calling it without ``begin_loading``, or twice, is harmless.

Libraries never call these: a program that imports the client library or the simulator keeps
its own collector settings and pydantic plugins.
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
