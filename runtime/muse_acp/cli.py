"""The ``muse-acp`` command line: ``serve`` (the default), ``demo``, ``doctor`` and ``login``.

Editors and ``acpx`` launch ``muse-acp`` or ``muse-acp serve`` and speak ACP on its stdio.
``demo`` runs a scripted conversation against the bundled ``muse-sim`` host, ``doctor``
reports what the configured Muse executable supports, and ``login`` runs ``muse login`` in the
terminal (the terminal authentication method ACP clients offer).

Options given before the command (``muse-acp --muse PATH doctor``) apply to it unless the
command is given the same option itself. ``--version`` prints the adapter's version and, when a
Muse executable is found, what its own ``--version`` says. A bad option or value exits with
status 2 and a message, as does an unusable ``MUSE_ACP_*`` variable for ``serve``. Serving
with a terminal on stdin prints a one-line hint on stderr first: a person who typed the bare
command learns what it is, and the protocol on stdout is untouched.

The bare command and ``serve`` without options (what editors launch) are served (``serving``)
without loading the command-line parser (``cli_commands``), which costs a noticeable part of a
cold start.
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
