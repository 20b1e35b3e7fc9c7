"""The ``muse-sim`` command line: what a client runs on a real ``muse`` binary, simulated.

Contract: ``main`` parses the arguments with argparse and returns the exit status:
``--version``, ``serve`` (MSP on stdio until stdin ends, or ``--replay``; ``serve --help`` lists
its flags), ``skills list``, ``login`` / ``logout`` (a credential file, see ``accounts``) and
``exec --json`` (``exec``). Usage errors, an unsupported ``MUSE_SIM_VERSION``, malformed
``MUSE_SIM_FAULTS`` or ``MUSE_SIM_QUIRKS`` and an unreadable Muse settings file
(``mcp_settings``) exit 2. Startup is kept fast, since a client may spawn one host per
operation: the wire models and the runtime are imported only once ``serve`` is known to run.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from muse_acp.sim.options.exec_args import add_exec_parser, legacy_version
from muse_acp.sim.options.serve_args import add_serve_parser
from muse_acp.sim.options.versions import UnsupportedVersion, resolve_version

if TYPE_CHECKING:
    from muse_acp.sim.options.settings import ServeOptions

__all__ = ["ServeRefused", "build_parser", "main", "parser", "serve_options"]

USAGE_ERROR: Final = 2
FLOOD_LINE: Final = b"muse-sim: simulated diagnostic output for stderr-flood\n"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``muse-sim`` (exposed for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="muse-sim",
        description="A simulated Muse Code host for testing MSP clients.",
    )
    parser.add_argument("--version", action="store_true", help="print the host version")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    add_serve_parser(commands)

    skills = commands.add_parser("skills", help="inspect skills")
    skill_commands = skills.add_subparsers(dest="skills_command", metavar="COMMAND")
    listing = skill_commands.add_parser("list", help="list the available skills")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument("--workspace", metavar="DIR", help="workspace to inspect")

    commands.add_parser("login", help="store simulated credentials")
    commands.add_parser("logout", help="remove stored credentials")
    add_exec_parser(commands)
    return parser


@functools.cache
def parser() -> argparse.ArgumentParser:
    """``build_parser()``, built once: parsing leaves a parser as it was, and a process that plays
    many hosts (``in_process``) would otherwise build one per command, each costing more than the
    command's own parse."""
    return build_parser()


def _fail(message: str) -> int:
    sys.stderr.write(f"muse-sim: {message}\n")
    return USAGE_ERROR


def _flood_stderr(size: int) -> None:
    line = FLOOD_LINE
    block = line * (65536 // len(line) + 1)
    remaining = size
    while remaining > 0:
        chunk = block[: min(remaining, len(block))]
        view = memoryview(chunk)
        while view:
            view = view[os.write(2, view) :]
        remaining -= len(chunk)


class ServeRefused(ValueError):
    """``serve`` cannot start with these settings; the message says which and why."""


def serve_options(args: argparse.Namespace, env: Mapping[str, str]) -> ServeOptions:
    """The options ``serve`` runs with, from its parsed arguments and the environment ``env``.

    Raises:
        ServeRefused: an unsupported version, malformed faults or quirks, or an unreadable
            Muse settings file.
    """
    from pathlib import Path

    from muse_acp.sim.options.accounts import API_KEY_ENV
    from muse_acp.sim.options.faults import FAULTS_ENV, FaultSyntaxError, parse_faults
    from muse_acp.sim.options.mcp_settings import SettingsError, capture_settings, read_settings
    from muse_acp.sim.options.quirks import QUIRKS_ENV, QuirkSyntaxError, parse_quirks
    from muse_acp.sim.options.settings import CAPTURE_ENV, ServeOptions, resolve_home
    from muse_acp.sim.state.first_words import TIMINGS_ENV

    try:
        version = resolve_version(env)
        faults = parse_faults(env.get(FAULTS_ENV, ""))
        quirks = parse_quirks(env.get(QUIRKS_ENV, ""))
        settings = read_settings(env)
    except (UnsupportedVersion, FaultSyntaxError, QuirkSyntaxError, SettingsError) as exc:
        raise ServeRefused(str(exc)) from None
    capture_settings(env, settings.servers, settings.default_profile)
    capture, timings = env.get(CAPTURE_ENV, ""), env.get(TIMINGS_ENV, "")
    return ServeOptions(
        home=resolve_home(env),
        version=version,
        faults=faults,
        quirks=quirks,
        disable_write=args.disable_write,
        disable_shell=args.disable_shell,
        disable_sandbox=args.disable_sandbox,
        sandbox_network=args.sandbox_network,
        no_session_log=args.no_session_log,
        trust_workspace=args.trust_workspace,
        env_api_key=bool(env.get(API_KEY_ENV, "").strip()),
        capture=Path(capture).absolute() if capture else None,
        timings=Path(timings).absolute() if timings else None,
        replay=Path(args.replay) if args.replay is not None else None,
        pace=args.pace,
        settings_mcp=settings.servers,
        default_profile=settings.default_profile,
    )


def _serve(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from muse_acp.sim.options.faults import exit_now

    try:
        options = serve_options(args, env)
    except ServeRefused as exc:
        return _fail(str(exc))
    faults = options.faults
    if faults.exits_at("startup"):
        exit_now("exit:startup")
    if faults.stderr_flood:
        _flood_stderr(faults.stderr_flood)
    from muse_acp.loading import begin_loading, end_loading

    begin_loading()
    if options.replay is not None:
        from muse_acp.sim.serve.replay import run_replay

        end_loading()
        return run_replay(options)
    from muse_acp.heap import keep_large_buffers
    from muse_acp.sim.serve.host import run_host

    end_loading()
    keep_large_buffers()  # a stored-output page is answered from a MiB buffer or two, as serve's
    return run_host(options)


def _skills(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.skills_command != "list":
        parser.print_usage(sys.stderr)
        return USAGE_ERROR
    from muse_acp.sim.options.accounts import skills_document, skills_table

    workspace: str | None = args.workspace
    if workspace is not None and not os.path.isdir(workspace):
        return _fail(f"workspace {workspace!r} is not a directory")
    sys.stdout.write((skills_document() if args.json else skills_table()) + "\n")
    return 0


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run ``muse-sim`` with ``argv`` (default: the process arguments) in ``environ`` (default:
    the process environment); return the exit status."""
    env = os.environ if environ is None else environ
    legacy = legacy_version(env)
    arguments = list(sys.argv[1:] if argv is None else argv)
    if legacy is not None and arguments[:1] == ["serve"]:
        return _fail(f"muse {legacy.version} has no `serve` command (it came with Muse 1.1.1)")
    try:
        args = parser().parse_args(arguments)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    try:
        version = legacy or resolve_version(env)
    except UnsupportedVersion as exc:
        return _fail(str(exc))
    if args.version:
        sys.stdout.write(version.banner + "\n")
        return 0
    if args.command == "serve":
        return _serve(args, env)
    if args.command == "exec":
        from muse_acp.sim.serve.exec import run_exec

        return run_exec(args)
    if args.command == "skills":
        return _skills(args, parser())
    from muse_acp.sim.options.accounts import login, logout
    from muse_acp.sim.options.settings import resolve_home

    home = resolve_home(env)
    if args.command == "login":
        login(home)
        return 0
    if args.command == "logout":
        logout(home)
        return 0
    parser().print_usage(sys.stderr)
    return USAGE_ERROR
