"""``muse-sim serve`` commands run for the tests: as a process or served in process.

``sim_process`` starts ``python -m muse_acp.sim serve *args`` with ``home`` as its state
directory in the environment ``sim_env`` makes, drains its stderr and yields a ``SimProcess``.
``sim_hosted`` takes the same arguments and hands the same command line and environment to
``SimLauncher`` (``muse_acp.sim.in_process``), which serves it in this process, a crash ending
that host alone with the exit status and stderr lines the process would leave; it yields a
``SimHosted``. Both are ``SimRun``s: a ``SimPeer`` with the host's exit status (``close``,
``exited``), the output it writes before ending (``rest``) and its stderr (``diagnostics``: in
process, its last lines). What ``SimLauncher`` never serves in process (``--replay``, a stderr
flood, a usage error) it starts as a process. Tests use ``sim_hosted`` unless their claim is
about the process itself (its memory, a crash that ends it at once, its stderr pipe). With
``strict`` every frame read is checked against the simulated version; the block fails on any
violation left.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from muse_acp.host.launch import HostProcess
from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.launcher import write_launcher

from .harness import WAIT, SimPeer

__all__ = ["SimHosted", "SimProcess", "SimRun", "sim_env", "sim_hosted", "sim_process"]


async def _drain(stream: ByteReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            sink += chunk
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


class SimRun(SimPeer, ABC):
    """A ``muse-sim serve`` command running, as a process or served in process: its exit
    status and what it wrote to stderr, besides the frames."""

    @property
    @abstractmethod
    def diagnostics(self) -> str:
        """What the host wrote to stderr."""

    @abstractmethod
    async def _wait(self) -> int:
        """The exit status, once the host has ended."""

    @abstractmethod
    def _kill(self) -> None:
        """End a host that outlived the end of its input by ``WAIT`` seconds."""

    async def close(self) -> int:
        """Close stdin and wait for the exit status (killing the host if it lingers)."""
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send_stream.aclose()
        with anyio.move_on_after(WAIT):
            return await self._wait()
        self._kill()
        return await self._wait()

    async def rest(self) -> list[bytes]:
        """Every line still to come before the host's output ends."""
        lines: list[bytes] = []
        with anyio.fail_after(WAIT):
            async for line in self.reader:
                assert isinstance(line, bytes), "unexpected oversized frame"
                lines.append(line)
        return lines

    async def rest_after_close(self) -> list[bytes]:
        """Close stdin, then every line the host writes before its output ends."""
        await self._send_stream.aclose()
        return await self.rest()

    async def exited(self) -> int:
        """Wait for the host to end by itself."""
        with anyio.fail_after(WAIT):
            return await self._wait()


class SimProcess(SimRun):
    """One running simulator process (see the module docstring)."""

    def __init__(
        self, process: Process, stderr: bytearray, version: str, *, strict: bool = False
    ) -> None:
        assert process.stdout is not None
        assert process.stdin is not None
        super().__init__(process.stdout, process.stdin, version, strict=strict)
        self.process = process
        self.stderr = stderr

    @property
    def diagnostics(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    async def _wait(self) -> int:
        return await self.process.wait()

    def _kill(self) -> None:
        self.process.kill()


class SimHosted(SimRun):
    """A ``muse-sim serve`` command served in process by ``SimLauncher`` (see ``sim_hosted``)."""

    def __init__(self, host: HostProcess, version: str, *, strict: bool) -> None:
        super().__init__(host.stdout, host.stdin, version, strict=strict)
        self.host = host

    @property
    def diagnostics(self) -> str:
        return self.host.stderr_tail()

    async def _wait(self) -> int:
        await self.host.exited.wait()
        assert self.host.returncode is not None
        return self.host.returncode

    def _kill(self) -> None:
        raise TimeoutError(f"the host served in process still ran {WAIT} s after its input ended")


def sim_env(home: Path, version: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MUSE_SIM_")}
    env.update(MUSE_SIM_HOME=str(home), MUSE_SIM_VERSION=version)
    env.update(extra or {})
    return env


@asynccontextmanager
async def sim_process(
    home: Path,
    *args: str,
    version: str = "1.2.1",
    env: Mapping[str, str] | None = None,
    strict: bool = False,
) -> AsyncIterator[SimProcess]:
    """Run ``muse-sim serve *args`` with ``home`` as its state directory."""
    command = [sys.executable, "-m", "muse_acp.sim", "serve", *args]
    stderr = bytearray()
    process = await anyio.open_process(command, env=sim_env(home, version, env))
    async with process, anyio.create_task_group() as group:
        group.start_soon(_drain, process.stderr, stderr)
        sim = SimProcess(process, stderr, version, strict=strict)
        try:
            yield sim
        finally:
            with anyio.CancelScope(shield=True):
                await sim.close()
            group.cancel_scope.cancel()
    assert sim.violations == [], sim.violations


@functools.cache
def _plain_launcher() -> tuple[tempfile.TemporaryDirectory[str], str]:
    """A plain ``muse-sim`` launcher, the only executable ``SimLauncher`` serves in process;
    written once per test process, in a folder removed when the process ends."""
    folder = tempfile.TemporaryDirectory(prefix="muse-sim-")
    return folder, str(write_launcher(Path(folder.name) / "muse"))


@asynccontextmanager
async def sim_hosted(
    home: Path,
    *args: str,
    version: str = "1.2.1",
    env: Mapping[str, str] | None = None,
    strict: bool = False,
) -> AsyncIterator[SimHosted]:
    """Serve ``muse-sim serve *args`` in process, as ``sim_process`` would run it."""
    _, launcher = _plain_launcher()
    argv = [launcher, "serve", *args]
    environ = sim_env(home, version, env)
    async with SimLauncher().serve(argv, cwd=os.getcwd(), env=environ) as host:
        sim = SimHosted(host, version, strict=strict)
        yield sim
    assert sim.violations == [], sim.violations
