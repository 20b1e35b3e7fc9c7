"""Developer and CI tasks. A bare ``nox`` runs codegen_check, lint, typecheck and tests."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["codegen_check", "lint", "typecheck", "tests"]
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


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[dev,codegen]")
    session.run("pytest", *session.posargs)


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
    session.run(
        "pytest",
        "tests/robust/test_fuzz_frames.py",
        "tests/robust/test_fuzz_prompts.py",
        *session.posargs,
        env={"MUSE_ACP_FUZZ_EXAMPLES": examples},
    )
