"""Serving ACP on stdio: what ``muse-acp`` and ``muse-acp serve`` run.

Contract: ``serve_with(options)`` loads the configuration (the ``CommonOptions`` given on the
command line over the ``MUSE_ACP_*`` environment), starts probing the Muse executable, answers
an ``initialize`` that comes first before the event loop loads (``agent.handshake.early``), and
serves the agent on stdin/stdout until the client closes it; it returns 0, or 2 after a
one-line message on stderr for an unusable setting. With a terminal on stdin it first prints
``TERMINAL_HINT`` on stderr. Both ``cli`` (the fast path editors take) and ``cli_commands``
(the parsed command line) serve through it; it imports neither.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from muse_acp.agent.handshake.early import Opening
    from muse_acp.config import AdapterConfig

__all__ = ["TERMINAL_HINT", "CommonOptions", "serve_with"]

TERMINAL_HINT: Final = (
    "muse-acp: an ACP agent for Muse Code, now serving the protocol on stdin/stdout; editors "
    "and ACP clients start it themselves. To see it at work, run `muse-acp demo` (Ctrl-D quits)."
)


@dataclass(frozen=True, slots=True)
class CommonOptions:
    """The options given before the command."""

    muse: str | None = None
    log_level: str | None = None
    data_dir: Path | None = None
    backend: str | None = None
    trace: str | None = None


async def _serve(
    serve_agent: Callable[[AdapterConfig, Opening], Awaitable[None]],
    config: AdapterConfig,
    opening: Opening,
) -> None:
    from muse_acp.event_loop import loop_name

    logging.getLogger("muse_acp").debug("serving on the %s event loop", loop_name())
    await serve_agent(config, opening)


def serve_with(options: CommonOptions) -> int:
    """Serve ACP on stdio with ``options``; the exit status (2 for an unusable setting)."""
    from muse_acp.loading import begin_loading

    begin_loading()  # the agent resumes the collector once it is loaded
    import anyio

    from muse_acp.config import ConfigError, load_config
    from muse_acp.heap import keep_large_buffers
    from muse_acp.host.binary import (
        HostUnavailable,
        discard_early_probes,
        resolve_binary,
        start_probe,
    )
    from muse_acp.logs import configure_logging

    if sys.stdin is not None and sys.stdin.isatty():
        print(TERMINAL_HINT, file=sys.stderr, flush=True)
    try:
        configure_logging(options.log_level)
        config = load_config(
            os.environ,
            muse_bin=options.muse,
            data_dir=options.data_dir,
            backend=options.backend,
            trace=options.trace,
        )
    except ConfigError as error:
        print(f"muse-acp: {error}", file=sys.stderr)
        return 2
    # The probes run while the agent loads: the requests after initialize need their answers.
    # A missing executable is reported to the client by initialize and the first session.
    with contextlib.suppress(HostUnavailable):
        start_probe(resolve_binary(config.muse_bin))
    try:
        # An initialize first is answered before the event loop loads (``handshake.early``).
        from muse_acp.agent.handshake.early import answer_first

        opening = answer_first(config)
        if opening is None:
            return 0  # stopped, or left, before anything was served
        # After the answer (tuning loads ctypes): large frames come with sessions, later.
        if keep_large_buffers():
            logging.getLogger("muse_acp").debug("heap: large buffers are kept for reuse")
        from muse_acp.agent.server import serve as serve_agent
        from muse_acp.event_loop import backend_options

        loop = backend_options(config.event_loop)
        anyio.run(_serve, serve_agent, config, opening, backend_options=loop)
    finally:
        discard_early_probes()
    return 0
