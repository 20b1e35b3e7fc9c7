"""The ``muse-acp`` command line: ``serve`` (the default), ``demo``, ``doctor``, ``login``,
``install`` and ``uninstall``.

Contract: editors launch ``muse-acp`` or ``muse-acp serve`` and speak ACP on its stdio;
``demo`` runs a scripted conversation against ``muse-sim``, ``doctor`` reports what the Muse
executable supports, ``login`` runs ``muse login`` in the terminal, ``install`` / ``uninstall``
add muse-acp to an editor's settings or take it out (``editors``). Options given before the
command apply to it unless the command repeats them. A bad option or value exits 2 with a
message, as does an unusable ``MUSE_ACP_*`` variable for ``serve``. Serving with a terminal on
stdin prints a one-line hint on stderr, never on stdout. The bare command and ``serve`` without
options (what editors launch) skip the command-line parser (``serving``), for a faster start.
"""

from __future__ import annotations

import sys

from muse_acp.serving import CommonOptions, serve_with

__all__ = ["main"]


def main() -> None:
    """The ``muse-acp`` command."""
    if sys.argv[1:] in ([], ["serve"]):
        raise SystemExit(serve_with(CommonOptions()))
    from muse_acp.cli_commands import app

    app()
