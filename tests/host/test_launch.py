"""Starting Muse: the real launcher's bounds, and muse-sim played in process as a process would."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from muse_acp.host.client import HostEnded, open_host
from muse_acp.host.launch import SUBPROCESSES
from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.launcher import SimWorld, write_launcher
from tests.robust.faults_harness import wait_until

pytestmark = pytest.mark.anyio

WAIT = 20.0


async def test_a_short_command_over_its_output_limit_is_stopped_there() -> None:
    with anyio.fail_after(WAIT):
        done = await SUBPROCESSES.run(
            ["sh", "-c", "echo started >&2; cat /dev/zero"],
            cwd=None,
            env=None,
            budget=WAIT,
            limit=1000,
        )
    assert (done.status, len(done.stdout), done.overflowed) == (None, 1000, True)
    assert done.stderr == b"started\n"


async def test_a_short_command_that_leaves_something_running_ends_with_its_status() -> None:
    with anyio.fail_after(WAIT):
        done = await SUBPROCESSES.run(
            ["sh", "-c", "sleep 60 & echo $!; echo going >&2; exit 3"],
            cwd=None,
            env=None,
            budget=WAIT,
            limit=1000,
        )
    assert (done.status, done.stderr, done.overflowed) == (3, b"going\n", False)
    left = int(done.stdout)
    # Gone with the command's group (at most a zombie its new parent has yet to reap).
    await wait_until(lambda: _dead(left), WAIT)


def _dead(pid: int) -> bool:
    """``pid`` is gone, or a zombie its new parent has yet to reap."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return raw[raw.rindex(")") + 2 :].startswith("Z")


async def test_a_short_command_over_its_budget_is_stopped_and_has_no_status() -> None:
    with anyio.fail_after(WAIT):
        done = await SUBPROCESSES.run(
            ["sh", "-c", "echo started; sleep 60 & wait"],
            cwd=None,
            env=None,
            budget=0.5,
            limit=1000,
        )
    assert (done.status, done.stdout) == (None, b"started\n")


async def test_a_missing_command_cannot_be_started(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await SUBPROCESSES.run(
            [str(tmp_path / "muse")], cwd=None, env=None, budget=WAIT, limit=1000
        )


@pytest.mark.parametrize("args", [["--version"], ["serve", "--help"], ["skills", "list", "--json"]])
async def test_muse_sim_in_process_answers_short_commands_as_its_process_does(
    tmp_path: Path, args: list[str]
) -> None:
    world = SimWorld.make(tmp_path, "1.4.2")
    argv = [str(world.muse_bin), *args]
    env = world.env()
    played = await SimLauncher().run(argv, cwd=None, env=env, budget=WAIT, limit=1 << 20)
    real = await SUBPROCESSES.run(argv, cwd=None, env=env, budget=WAIT, limit=1 << 20)
    assert played == real
    assert played.status == 0
    assert played.stdout


async def test_a_crash_in_process_ends_that_host_alone_as_a_process_would_end(
    tmp_path: Path,
) -> None:
    world = SimWorld.make(tmp_path)
    env = {**world.env(), "MUSE_SIM_FAULTS": "exit:handshake"}
    with anyio.fail_after(WAIT), pytest.raises(HostEnded) as ended:
        async with open_host(
            str(world.muse_bin),
            cwd=str(world.workspace),
            env=env,
            startup_timeout=WAIT,
            launcher=SimLauncher(),
        ):
            pass
    assert ended.value.exit_code == 1
    assert "injected fault exit:handshake" in ended.value.stderr_tail


async def test_a_host_in_process_ends_with_its_input_and_a_changed_launcher_is_a_process(
    tmp_path: Path,
) -> None:
    world = SimWorld.make(tmp_path)
    launcher = SimLauncher()
    pids: list[int] = []
    for muse in (world.muse_bin, write_launcher(tmp_path / "muse-slow", prelude="true")):
        with anyio.fail_after(WAIT):
            async with open_host(
                str(muse),
                cwd=str(world.workspace),
                env=world.env(),
                startup_timeout=WAIT,
                launcher=launcher,
            ) as host:
                pids.append(host.process.pid)
        assert host.process.returncode == 0
    assert pids[0] == os.getpid()
    assert pids[1] != os.getpid()


async def test_armed_faults_go_to_the_next_serve_alone_whether_played_or_a_process(
    tmp_path: Path,
) -> None:
    world = SimWorld.make(tmp_path)
    launcher = SimLauncher()

    async def serve() -> None:
        with anyio.fail_after(WAIT):
            async with open_host(
                str(world.muse_bin),
                cwd=str(world.workspace),
                env=world.env(),
                startup_timeout=WAIT,
                launcher=launcher,
            ):
                assert launcher.served[-1].held

    launcher.arm("exit:handshake")
    with pytest.raises(HostEnded) as ended:
        await serve()
    assert "injected fault exit:handshake" in ended.value.stderr_tail
    assert launcher.armed is None
    await serve()  # the faults went with the host that took them
    # A stderr flood is played by a process: it takes the armed faults all the same.
    flood = "stderr-flood:1000,exit:handshake"
    launcher.arm(flood)
    with pytest.raises(HostEnded) as ended:
        await serve()
    assert "injected fault exit:handshake" in ended.value.stderr_tail
    served = [(s.armed, s.held, s.host.pid == os.getpid()) for s in launcher.served]
    assert served == [("exit:handshake", False, True), (None, False, True), (flood, False, False)]


async def test_a_host_found_gone_calls_what_waits_on_its_death_once(tmp_path: Path) -> None:
    world = SimWorld.make(tmp_path)
    calls: list[str] = []
    with anyio.fail_after(WAIT):
        async with open_host(
            str(world.muse_bin),
            cwd=str(world.workspace),
            env=world.env(),
            startup_timeout=WAIT,
            launcher=SimLauncher(),
        ) as host:
            host.on_death(lambda: calls.append("first"))
            forget = host.on_death(lambda: calls.append("forgotten"))
            forget()
            assert calls == []
        # Leaving the block ends the host: each waiter is called once, a forgotten one never.
        assert host.dead.is_set()
        assert calls == ["first"]
        host.mark_dead()
        assert calls == ["first"]
        host.on_death(lambda: calls.append("late"))  # already gone: called at once
    assert calls == ["first", "late"]
