"""The ``muse-acp`` command-line parser: ``serve`` (the default), ``demo``, ``doctor``, ``support``
and ``check-trace`` (``cli_traces``), ``login``, ``install`` / ``uninstall`` (``editors``) and
``--version``, with the options ``cli`` documents. Loaded by ``cli.main`` only when the command
line needs parsing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Final

import typer

from muse_acp import __version__
from muse_acp.cli_traces import TraceOption, check_trace_command, support
from muse_acp.editors.targets import DEFAULT_NAME
from muse_acp.serving import CommonOptions, serve_with

__all__ = [
    "VERSION_TIMEOUT",
    "BackendOption",
    "DataDirOption",
    "LogOption",
    "MuseOption",
    "app",
    "default",
    "demo",
    "doctor",
    "install",
    "login",
    "serve",
    "uninstall",
]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="An Agent Client Protocol agent for Muse Code.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

VERSION_TIMEOUT: Final = 10.0
"""Seconds the Muse executable's ``--version`` may take when ``muse-acp --version`` asks."""


def _check_log_level(value: str | None) -> str | None:
    from muse_acp.config import ConfigError
    from muse_acp.logs import check_level

    if value is None:
        return None
    try:
        return check_level(value, "the log level")
    except ConfigError as error:
        raise typer.BadParameter(str(error)) from None


def _check_backend(value: str | None) -> str | None:
    from muse_acp.config import ConfigError, check_backend

    if value is None:
        return None
    try:
        return check_backend(value, "--backend")
    except ConfigError as error:
        raise typer.BadParameter(str(error)) from None


BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        metavar="NAME",
        help="msp (`muse serve`), exec (legacy `muse exec --json`) or auto "
        "(default: $MUSE_ACP_BACKEND, else auto: msp when Muse has `serve`).",
        show_default=False,
        callback=_check_backend,
    ),
]


MuseOption = Annotated[
    str | None,
    typer.Option(
        "--muse",
        metavar="PATH",
        help="Path to the Muse executable (default: $MUSE_ACP_MUSE_BIN, else `muse` on PATH).",
        show_default=False,
    ),
]
LogOption = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        metavar="LEVEL",
        help="debug, info, warning or error (default: $MUSE_ACP_LOG, else warning).",
        show_default=False,
        callback=_check_log_level,
    ),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        help="Where muse-acp keeps its own preferences (default: $MUSE_ACP_DATA_DIR).",
        show_default=False,
        file_okay=False,
    ),
]


def _common(ctx: typer.Context) -> CommonOptions:
    found = ctx.find_object(CommonOptions)
    return found if found is not None else CommonOptions()


def _muse_version(path: str) -> str:
    """The first line the executable's ``--version`` printed, or why there is none."""
    try:
        result = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"its --version did not answer within {VERSION_TIMEOUT:.0f}s"
    except OSError as error:
        return f"it could not be started: {error.strerror or error}"
    output = (result.stdout or result.stderr).decode("utf-8", "replace")
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    return first[:200] or "its --version printed nothing"


def _print_version(value: bool) -> None:
    if not value:
        return
    from muse_acp.config import ENV_MUSE_BIN
    from muse_acp.host.binary import HostUnavailable, resolve_binary

    print(f"muse-acp {__version__}")
    try:
        path = resolve_binary(os.environ.get(ENV_MUSE_BIN) or None)
    except HostUnavailable:
        print("Muse Code: no executable found (`muse-acp doctor` says where it looks)")
    else:
        print(f"Muse Code: {_muse_version(path)}, {path}")
    raise typer.Exit()


def _serve(options: CommonOptions) -> None:
    status = serve_with(options)
    if status:
        raise typer.Exit(status)


@app.callback(invoke_without_command=True)
def default(
    ctx: typer.Context,
    muse: MuseOption = None,
    log_level: LogOption = None,
    data_dir: DataDirOption = None,
    backend: BackendOption = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print muse-acp's version and the Muse executable's, then exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Without a command, serve ACP on stdio (the same as `muse-acp serve`)."""
    common = CommonOptions(muse=muse, log_level=log_level, data_dir=data_dir, backend=backend)
    ctx.obj = common
    if ctx.invoked_subcommand is None:
        _serve(common)


@app.command()
def serve(
    ctx: typer.Context,
    muse: MuseOption = None,
    log_level: LogOption = None,
    data_dir: DataDirOption = None,
    backend: BackendOption = None,
    trace: TraceOption = None,
) -> None:
    """Serve ACP on stdin/stdout (what editors and acpx launch)."""
    given = _common(ctx)
    _serve(
        CommonOptions(
            muse=muse or given.muse,
            log_level=log_level or given.log_level,
            data_dir=data_dir or given.data_dir,
            backend=backend or given.backend,
            trace=trace,
        )
    )


@app.command()
def demo(
    ctx: typer.Context,
    log_level: LogOption = None,
    muse: Annotated[
        str | None,
        typer.Option(
            "--muse", metavar="PATH", help="Run the demo against this Muse executable instead."
        ),
    ] = None,
) -> None:
    """Run a scripted conversation against the bundled muse-sim host and print it."""
    from muse_acp.demo import run_demo
    from muse_acp.logs import configure_logging

    given = _common(ctx)
    configure_logging(log_level or given.log_level or "error")
    raise typer.Exit(run_demo(muse or given.muse))


@app.command()
def doctor(
    ctx: typer.Context,
    muse: MuseOption = None,
    backend: BackendOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the findings as one JSON document.")
    ] = False,
) -> None:
    """Report muse-acp's settings, the Muse executable, its backend, handshake and features."""
    from muse_acp.doctor import run_doctor

    given = _common(ctx)
    raise typer.Exit(
        run_doctor(
            muse or given.muse,
            as_json=as_json,
            data_dir=given.data_dir,
            backend=backend or given.backend,
        )
    )


app.command()(support)
app.command("check-trace")(check_trace_command)


@app.command()
def login(ctx: typer.Context, muse: MuseOption = None) -> None:
    """Sign in to Muse in this terminal (runs `muse login`)."""
    from muse_acp.config import ConfigError, load_config
    from muse_acp.host.binary import HostUnavailable, resolve_binary

    try:
        config = load_config(os.environ, muse_bin=muse or _common(ctx).muse)
        binary = resolve_binary(config.muse_bin)
    except ConfigError as error:
        print(f"muse-acp: {error}", file=sys.stderr)
        raise typer.Exit(2) from None
    except HostUnavailable as error:
        print(f"muse-acp: {error.message}", file=sys.stderr)
        raise typer.Exit(2) from None
    os.execv(binary, [binary, "login"])


class EditorName(StrEnum):
    zed = "zed"
    jetbrains = "jetbrains"


EditorArgument = Annotated[
    EditorName, typer.Argument(help="The editor: zed or jetbrains.", show_default=False)
]
SettingsOption = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        metavar="PATH",
        help="The settings file to change (default: the editor's own; "
        "Zed: settings.json, JetBrains: ~/.jetbrains/acp.json).",
        show_default=False,
        dir_okay=False,
    ),
]
NameOption = Annotated[
    str, typer.Option("--name", metavar="NAME", help="The agent's name in the editor.")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the change as a diff; change nothing.")
]


@app.command()
def install(
    editor: EditorArgument,
    settings: SettingsOption = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="NAME=VALUE",
            help="An environment variable for muse-acp in the editor (repeatable; replaces the "
            "entry's env when given, e.g. MUSE_ACP_MUSE_BIN=/usr/local/bin/muse).",
            show_default=False,
        ),
    ] = None,
    custom_mcp: Annotated[
        bool | None,
        typer.Option(
            "--custom-mcp/--no-custom-mcp",
            help="JetBrains: pass the MCP servers configured in the IDE to muse-acp "
            "(use_custom_mcp; default: the file's default_mcp_settings).",
            show_default=False,
        ),
    ] = None,
    idea_mcp: Annotated[
        bool | None,
        typer.Option(
            "--idea-mcp/--no-idea-mcp",
            help="JetBrains: pass the IDE's own MCP server to muse-acp (use_idea_mcp).",
            show_default=False,
        ),
    ] = None,
    name: NameOption = DEFAULT_NAME,
    dry_run: DryRunOption = False,
) -> None:
    """Add muse-acp to an editor's agents, by absolute path (or update its entry)."""
    from muse_acp.editors.commands import parse_env, run_install

    try:
        variables = parse_env(env) if env else None
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--env") from None
    flags = {"use_custom_mcp": custom_mcp, "use_idea_mcp": idea_mcp}
    extra: dict[str, object] = {key: value for key, value in flags.items() if value is not None}
    if extra and editor is not EditorName.jetbrains:
        raise typer.BadParameter(
            "only JetBrains IDEs read them", param_hint="--custom-mcp/--idea-mcp"
        )
    raise typer.Exit(
        run_install(
            editor.value, settings=settings, env=variables, name=name, dry_run=dry_run, extra=extra
        )
    )


@app.command()
def uninstall(
    editor: EditorArgument,
    settings: SettingsOption = None,
    name: NameOption = DEFAULT_NAME,
    dry_run: DryRunOption = False,
) -> None:
    """Remove muse-acp's entry from an editor's agents, leaving the rest of the file as it was."""
    from muse_acp.editors.commands import run_uninstall

    raise typer.Exit(run_uninstall(editor.value, settings=settings, name=name, dry_run=dry_run))
