"""Developer and CI tasks. A bare ``nox`` runs codegen_check, lint, typecheck, tests and dist.

Others are run by name: codegen, coverage, bench and fuzz.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["codegen_check", "lint", "typecheck", "tests", "dist"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

TYPED_PATHS = ("runtime", "generated", "codegen", "tests", "noxfile.py")


@nox.session
def codegen(session: nox.Session) -> None:
    """Regenerate generated/ from the locked schemas in spec/."""
    session.install("-e", ".[codegen]")
    session.run("python", "-m", "codegen", "generate")


@nox.session
def codegen_check(session: nox.Session) -> None:
    """Fail with a diff when generated/ does not match spec/."""
    session.install("-e", ".[codegen]")
    session.run("python", "-m", "codegen", "check")


@nox.session
def lint(session: nox.Session) -> None:
    """Run ruff's linter and formatter check over the whole tree."""
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Run mypy --strict over runtime, generated, codegen and tests."""
    session.install("-e", ".[dev,codegen]")
    session.run("mypy", *TYPED_PATHS)


# Most tests start muse-acp and muse-sim processes; compiling their modules once, instead of in
# every process, is most of what makes the suite fast (PYTHONDONTWRITEBYTECODE would stop it).
BYTECODE_ENV = {"PYTHONDONTWRITEBYTECODE": ""}


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on six workers (``nox -s tests -- ARGS`` passes ARGS to pytest).

    Six workers on a two-core machine, because most tests spend most of their time waiting: for
    a deadline to pass (a host that hangs must be given up on) or for the processes of the
    subprocess tier; the in-process tier costs little CPU, and four more workers fill that time.
    Work stealing lets an idle worker take tests queued for a busy one, so the run does not end
    with one worker finishing a long queue alone. The twenty slowest tests are listed at the end,
    so a test that grows slow shows in CI's log before it nears its timeout. The ACP SDK's
    schemas the wire tests validate every frame against are fetched first (once, into the
    user's cache; see tests/acp_sdk_schema.py), so pytest itself never touches the network.
    """
    session.install("-e", ".[dev,codegen]")
    session.run("python", "-m", "compileall", "-q", "runtime", "generated", env=BYTECODE_ENV)
    session.run("python", "-m", "tests.acp_sdk_schema")
    args = session.posargs or ["-n", "6", "--dist", "worksteal", "--durations=20"]
    session.run("pytest", *args, env=BYTECODE_ENV)


@nox.session
def coverage(session: nox.Session) -> None:
    """Run the test suite under coverage and report what it left unrun (not in a bare ``nox``).

    ``[tool.coverage.run]`` in pyproject.toml follows the muse-acp and muse-sim processes the
    tests start, so their lines count too. ``nox -s coverage -- ARGS`` passes ARGS to pytest.
    """
    session.install("-e", ".[dev,codegen]", "pytest-cov>=7")
    session.run("python", "-m", "compileall", "-q", "runtime", "generated", env=BYTECODE_ENV)
    session.run("python", "-m", "tests.acp_sdk_schema")
    args = session.posargs or ["-n", "6", "--dist", "worksteal"]
    session.run("pytest", "--cov", "--cov-report=term", *args, env=BYTECODE_ENV)


@nox.session
def bench(session: nox.Session) -> None:
    """Measure the performance figures side by side (a few minutes); -- --out PATH for the JSON."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "bench", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Fuzz the agent's wire for long: $MUSE_ACP_FUZZ_EXAMPLES examples per test (default 3000)."""
    session.install("-e", ".[dev]")
    examples = os.environ.get("MUSE_ACP_FUZZ_EXAMPLES", "3000")
    # An example takes a tenth of a second on a loaded machine: the usual per-test timeout
    # would cut a long run short, so each test gets a second per example on top of it.
    extra = int(examples) if examples.strip().isdigit() else 0
    session.run(
        "pytest",
        "tests/robust/test_fuzz_frames.py",
        "tests/robust/test_fuzz_prompts.py",
        f"--timeout={120 + extra}",
        *session.posargs,
        env={"MUSE_ACP_FUZZ_EXAMPLES": examples},
    )


PIP_TO_UV = {
    "index-url": ("UV_DEFAULT_INDEX", " "),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
}
"""pip settings and the uv variables that say the same, with the separator of each list."""


def _pip_settings(session: nox.Session) -> dict[str, str]:
    """pip's effective index settings in this session, as ``pip config list`` reports them.

    pip reads the environment over site, user and global files, in that order of precedence.
    """
    listing = session.run("python", "-m", "pip", "config", "list", silent=True) or ""
    rank = {":env:": 0, "site": 1, "user": 2, "global": 3}
    found: dict[str, tuple[int, str]] = {}
    for line in str(listing).splitlines():
        name, equals, quoted = line.partition("=")
        scope, _, key = name.rpartition(".")
        if not equals or key not in (*PIP_TO_UV, "cert"):
            continue
        value = " ".join(shlex.split(quoted))
        order = rank.get(scope, len(rank))
        if key not in found or order < found[key][0]:
            found[key] = (order, value)
    return {key: value for key, (_, value) in found.items()}


def _uv_environment(session: nox.Session, scratch: Path) -> dict[str, str]:
    """uv pointed at the indexes pip uses here, with every cache and home in ``scratch``."""
    env = {
        "UV_CACHE_DIR": str(scratch / "uv-cache"),
        "UV_TOOL_DIR": str(scratch / "uv-tools"),
        "UV_PYTHON_DOWNLOADS": "never",
        "PIPX_HOME": str(scratch / "pipx-home"),
        "PIPX_BIN_DIR": str(scratch / "pipx-bin"),
        "PIPX_MAN_DIR": str(scratch / "pipx-man"),
        "XDG_DATA_HOME": str(scratch / "data"),
        "MUSE_SIM_HOME": str(scratch / "sim-home"),
    }
    settings = _pip_settings(session)
    for key, (variable, separator) in PIP_TO_UV.items():
        if settings.get(key):
            env[variable] = separator.join(settings[key].split())
    cert = settings.get("cert")
    if cert and Path(cert).is_file():
        env["SSL_CERT_FILE"] = cert
    return env


@nox.session
def dist(session: nox.Session) -> None:
    """Build and check the sdist and wheel, then run the wheel as uvx and pipx users would."""
    session.install("build", "twine", "uv", "pipx")
    out = Path("dist")
    for old in out.glob("muse_acp-*"):
        old.unlink()
    session.run("python", "-m", "build", "--outdir", str(out))
    built = sorted(str(path) for path in out.glob("muse_acp-*"))
    session.run("twine", "check", "--strict", *built)
    wheel = next(path for path in built if path.endswith(".whl"))
    with tempfile.TemporaryDirectory(prefix="muse-acp-dist-") as scratch:
        env = _uv_environment(session, Path(scratch))
        session.run("uvx", "--from", wheel, "muse-acp", "--version", env=env)
        session.run("uvx", "--from", wheel, "muse-acp", "demo", env=env)
        # README's trial: the simulated Muse, signed in once, is ready and named as such.
        doctor = {**env, "MUSE_ACP_MUSE_BIN": "muse-sim"}
        session.run("pipx", "run", "--spec", wheel, "muse-sim", "login", env=doctor)
        session.run("pipx", "run", "--spec", wheel, "muse-acp", "doctor", env=doctor)
