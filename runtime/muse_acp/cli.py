"""The ``muse-acp`` command line: ``serve`` (the default), ``demo``, ``doctor`` and ``login``.

Editors and ``acpx`` launch ``muse-acp`` or ``muse-acp serve`` and speak ACP on its stdio.
``demo`` runs a scripted conversation against the bundled ``muse-sim`` host, ``doctor``
reports what the configured Muse executable supports, and ``login`` runs ``muse login`` in the
terminal (the terminal authentication method ACP clients offer).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="An Agent Client Protocol agent for Muse Code.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

MuseOption = Annotated[
    str | None,
    typer.Option(
        "--muse",
        help="Path to the Muse executable (default: $MUSE_ACP_MUSE_BIN, else `muse` on PATH).",
        show_default=False,
    ),
]
LogOption = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        help="debug, info, warning or error (default: $MUSE_ACP_LOG, else warning).",
        show_default=False,
    ),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where muse-acp keeps its own preferences (default: $MUSE_ACP_DATA_DIR).",
        show_default=False,
    ),
]


def _serve(muse: str | None, log_level: str | None, data_dir: Path | None) -> None:
    import anyio

    from muse_acp.agent.server import serve as serve_agent
    from muse_acp.config import ConfigError, load_config
    from muse_acp.logs import configure_logging

    configure_logging(log_level)
    try:
        config = load_config(os.environ, muse_bin=muse, data_dir=data_dir)
    except ConfigError as error:
        print(f"muse-acp: {error}", file=sys.stderr)
        raise typer.Exit(2) from None
    anyio.run(serve_agent, config)


@app.callback(invoke_without_command=True)
def default(
    ctx: typer.Context,
    muse: MuseOption = None,
    log_level: LogOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Without a command, serve ACP on stdio (the same as `muse-acp serve`)."""
    if ctx.invoked_subcommand is None:
        _serve(muse, log_level, data_dir)


@app.command()
def serve(
    muse: MuseOption = None, log_level: LogOption = None, data_dir: DataDirOption = None
) -> None:
    """Serve ACP on stdin/stdout (what editors and acpx launch)."""
    _serve(muse, log_level, data_dir)


@app.command()
def demo(
    log_level: LogOption = None,
    muse: Annotated[
        str | None,
        typer.Option("--muse", help="Run the demo against this Muse executable instead."),
    ] = None,
) -> None:
    """Run a scripted conversation against the bundled muse-sim host and print it."""
    from muse_acp.demo import run_demo
    from muse_acp.logs import configure_logging

    configure_logging(log_level or "error")
    raise typer.Exit(run_demo(muse))


@app.command()
def doctor(muse: MuseOption = None) -> None:
    """Report the Muse executable, its version, serve support and enabled features."""
    from muse_acp.doctor import run_doctor

    raise typer.Exit(run_doctor(muse))


@app.command()
def login(muse: MuseOption = None) -> None:
    """Sign in to Muse in this terminal (runs `muse login`)."""
    from muse_acp.config import load_config
    from muse_acp.host.binary import HostUnavailable, resolve_binary

    try:
        binary = resolve_binary(load_config(os.environ, muse_bin=muse).muse_bin)
    except HostUnavailable as error:
        print(f"muse-acp: {error.message}", file=sys.stderr)
        raise typer.Exit(2) from None
    os.execv(binary, [binary, "login"])


def main() -> None:
    app()
