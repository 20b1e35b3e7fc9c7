"""The command line's part in traces: ``serve --trace MODE``, ``support`` and ``check-trace``.

Contract: ``TraceOption`` checks ``--trace`` as ``config.check_trace`` does; ``support`` writes
the support bundle (``traces.support``) to ``--out`` (default ``muse-acp-support-<UTC time>.zip``
in the current folder) with the settings of the command line over the environment, and exits 2
after a one-line message for an unusable setting or an unwritable file. ``check_trace_command``
checks a trace (``traces.check``) with muse-sim of the recorded Muse version as the executable
probed, in a scratch world, its hosts at the recorded pace times ``--pace`` (0: at once): exit 0
with no difference, 1 naming the first, 2 for an unreadable trace.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from muse_acp.serving import CommonOptions

__all__ = ["TraceOption", "check_trace_command", "support"]


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


def check_trace_command(
    trace: Annotated[
        Path, typer.Argument(metavar="TRACE", exists=True, dir_okay=False, help="A trace file.")
    ],
    wait: Annotated[
        float, typer.Option("--wait", metavar="SECONDS", help="Longest wait for muse-acp.")
    ] = 20.0,
    pace: Annotated[
        float,
        typer.Option(
            "--pace",
            metavar="FACTOR",
            min=0.0,
            help="Have the hosts wait the recorded intervals times FACTOR (each wait at most "
            "5 s); 0 answers at once.",
        ),
    ] = 0.0,
) -> None:
    """Replay a trace against this muse-acp, its hosts played by muse-sim, and print the first
    ACP frame that differs from the recording (exit status 1), or that none does."""
    import tempfile

    import anyio

    from muse_acp.config import load_config
    from muse_acp.logs import configure_logging
    from muse_acp.sim.in_process import SimLauncher
    from muse_acp.sim.launcher import SimWorld
    from muse_acp.traces.check import check_trace
    from muse_acp.traces.replay import read_trace

    configure_logging("error")  # the replayed session's own warnings are not the finding
    try:
        recorded = read_trace(trace)
    except (OSError, ValueError) as error:
        typer.echo(f"muse-acp: cannot read {trace}: {error}", err=True)
        raise typer.Exit(2) from None
    backend = recorded.decision("backend")
    version = backend.get("version") if isinstance(backend, dict) else None
    with tempfile.TemporaryDirectory(prefix="muse-acp-check-") as scratch:
        world = SimWorld.make(Path(scratch), str(version or "1.4.4"))
        env = world.env()
        outcome = anyio.run(
            lambda: check_trace(
                recorded,
                load_config(env),
                env,
                SimLauncher(),
                cwd=str(world.workspace),
                wait=wait,
                pace=pace,
            )
        )
    if outcome.first is not None:
        typer.echo(outcome.first.describe())
    for departure in outcome.host_departures:
        typer.echo(departure)
    if not outcome.ok:
        raise typer.Exit(1)
    typer.echo(f"no difference: muse-acp wrote the {outcome.written} ACP frames of the trace")
