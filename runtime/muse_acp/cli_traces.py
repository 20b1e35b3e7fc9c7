"""The command line's part in traces: ``serve --trace MODE`` and ``muse-acp support``.

Contract: ``TraceOption`` checks ``--trace`` as ``config.check_trace`` does; ``support`` writes
the support bundle (``traces.support``) to ``--out`` (default ``muse-acp-support-<UTC time>.zip``
in the current folder) with the settings of the command line over the environment, and exits 2
after a one-line message for an unusable setting or an unwritable file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from muse_acp.serving import CommonOptions

__all__ = ["TraceOption", "support"]


def _check_trace(value: str | None) -> str | None:
    from muse_acp.config import ConfigError, check_trace

    if value is None:
        return None
    try:
        return check_trace(value, "--trace")
    except ConfigError as error:
        raise typer.BadParameter(str(error)) from None


TraceOption = Annotated[
    str | None,
    typer.Option(
        "--trace",
        metavar="MODE",
        help="Write a trace of each connection to replay a bug: redacted (secrets hidden, text "
        "as sizes and hashes), full (secrets hidden) or off (default: $MUSE_ACP_TRACE, else off).",
        show_default=False,
        callback=_check_trace,
    ),
]


def support(
    ctx: typer.Context,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the bundle (default: muse-acp-support-<time>.zip here).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Write one file to attach to a bug report: doctor's findings, settings (no secret
    values), the newest redacted traces and their log lines."""
    from muse_acp.config import ConfigError, load_config
    from muse_acp.traces.support import write_bundle

    found = ctx.find_object(CommonOptions)
    given = found if found is not None else CommonOptions()
    try:
        config = load_config(
            os.environ, muse_bin=given.muse, data_dir=given.data_dir, backend=given.backend
        )
    except ConfigError as error:
        typer.echo(f"muse-acp: {error}", err=True)
        raise typer.Exit(2) from None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = out or Path(f"muse-acp-support-{stamp}.zip")
    try:
        write_bundle(config, os.environ, target, muse=config.muse_bin, echo=typer.echo)
    except OSError as error:
        typer.echo(f"muse-acp: cannot write {target}: {error.strerror or error}", err=True)
        raise typer.Exit(2) from None
