"""Resource bounds of the Docker backend against a real engine, each a probe that once got through (issue 12):
disk, the timeout kill of re-parented descendants, fork bombs at the pids limit, ``kill 1``, dead pool entries."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from envgym.sandbox import DEFAULT, SandboxCrashed, SandboxPool, SandboxState, SpecRejected, UnsafeArchive
from envgym.sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker

ESCAPEE = """setsid sh -c 'env -i sh -c "while :; do :; done" &'"""
"""A busy loop that clears its environment and re-parents to PID 1 (double fork): no tag, no parent link."""
BOMB = """setsid sh -c 'env -i python3 -c "import os
while True:
    try: os.fork()
    except OSError: pass" > /dev/null 2>&1 &'"""
"""A fork bomb that keeps the pids limit full (every process retries forever), escaped the same way."""


async def processes(sb: DockerSandbox) -> list[str]:
    """Every process's command line, read from /proc inside the container (not the ps that reads it)."""
    r = await sb.exec("for p in /proc/[0-9]*; do [ $p = /proc/$$ ] || tr '\\0\\n' '  ' < $p/cmdline | cut -c1-60; done")
    return [line for line in r.stdout.split("\n") if line.strip() and not line.startswith(("tr ", "cut "))]


async def test_disk_is_bounded_and_a_full_disk_is_named(make, engine):
    sb = await make()
    for run in (sb.exec, sb.session.exec):
        r = await run("head -c 1G /dev/zero > /work/big; du -m /work/big", timeout=60)
        assert r.disk_full and "No space left on device" in r.stderr, r
        assert int(r.stdout.split()[0]) <= 256  # the /work tmpfs cap, not the 1 GiB asked
        r = await run("rm /work/big; echo 1 > /work/small")
        assert r.ok and not r.disk_full
        r = await run("head -c 64M /dev/zero > /usr/big || head -c 64M /dev/zero > /big")
        assert not r.ok and "Read-only file system" in r.stderr and not r.disk_full
    r = await sb.session.exec("head -c 200M /dev/zero > /tmp/t; true")  # exit 0, but the mount is full
    assert r.ok and r.disk_full
    (info,) = await engine.call("containers", all=True, size=True, filters={"id": sb.id})
    assert info.get("SizeRw", 0) < 1 << 20  # nothing reached the host's disk through the container's layer


async def test_a_writable_root_is_refused_where_the_driver_cannot_cap_it(make, engine, base_image):
    info = await engine.call("info")
    backing = dict(info.get("DriverStatus") or []).get("Backing Filesystem", "")
    quota = await engine.disk_quota(base_image)
    if info["Driver"] == "overlay2" and backing != "xfs":
        assert quota is False
    writable = DEFAULT.model_copy(update={"read_only_root": False, "disk": "2g"})
    if quota:
        sb = await make(writable)
        assert (await engine.call("inspect_container", sb.id))["HostConfig"]["StorageOpt"]["size"]
    else:
        with pytest.raises(SpecRejected, match="unbounded_disk"):
            await make(writable)


async def test_timeout_kills_reparented_environment_cleared_descendants(make):
    sb = await make()
    await sb.exec("sleep 777 > /dev/null 2>&1 &")  # an earlier command's background server
    await asyncio.sleep(0.2)  # the clock's bound may be early by a few answers' transit (see the next test)
    for run in (sb.exec, sb.session.exec):
        r = await run(f"{ESCAPEE}; sleep 100", timeout=1.5)
        assert r.timed_out and r.exit_code is None
        left = await processes(sb)
        assert not [p for p in left if "while" in p or "sleep 100" in p], left
        assert any(p.startswith("sleep 777") for p in left), left  # started before the command: spared
        assert any(p.startswith("sleep 3600") for p in left)  # the keeper


async def test_a_late_clock_answer_does_not_kill_an_earlier_commands_server(make):
    """The container's clock is a lower bound learnt from helpers' answers: one that took half a second to arrive
    (a busy engine: CI once lost the test above to it) must not date the timed-out command half a second early."""
    sb = await make()
    await sb.exec("sleep 778 > /dev/null 2>&1 &")
    await asyncio.sleep(0.2)  # the server started 0.2 s before the command: an earlier command's, spared
    sb._clock_offset_ns -= 500_000_000  # as if every answer so far had been on its way for half a second
    r = await sb.exec(f"{ESCAPEE}; sleep 100", timeout=1.5)
    assert r.timed_out
    left = await processes(sb)
    assert not [p for p in left if "while" in p or "sleep 100" in p], left
    assert any(p.startswith("sleep 778") for p in left), left


async def test_fork_bomb_at_the_pids_limit_returns_and_the_next_command_works(make):
    sb = await make(DEFAULT.model_copy(update={"pids_limit": 64}))
    for run in (sb.exec, sb.session.exec):
        start = time.monotonic()
        r = await run(f"{BOMB}; sleep 100", timeout=3)
        assert r.timed_out and time.monotonic() - start < 20
        for again in (sb.session.exec, sb.exec):
            r = await again("echo alive")
            assert r.stdout == "alive\n", (run, again, r, await processes(sb))
        assert len(await processes(sb)) < 6  # init, keeper, helper and the reader


async def test_a_detached_fork_bomb_gives_results_not_key_errors(make):
    sb = await make(DEFAULT.model_copy(update={"pids_limit": 32}))
    await sb.session.open()
    await sb.session.exec(BOMB, timeout=5)  # returns at once; the bomb keeps every pid of the limit taken
    await asyncio.sleep(1)
    r = await sb.session.exec("echo alive", timeout=5)  # the old reply had no oom_count: KeyError
    assert r.exit_code == 127 and "Resource temporarily unavailable" in r.stderr and not r.oom_killed, r
    assert sb.state is SandboxState.RUNNING  # the agent's own doing, reported as its command's result


async def test_kill_1_is_a_crash_on_this_and_every_later_call(make):
    sb = await make()
    with contextlib.suppress(SandboxCrashed):  # the answer may still arrive before the container is gone
        await sb.session.exec("kill 1", timeout=10)
    await asyncio.sleep(1)
    for call in (lambda: sb.exec("true"), lambda: sb.session.exec("true"), lambda: sb.read("/work/x")):
        with pytest.raises(SandboxCrashed):
            await call()
    sb = await make()
    await sb.session.open()
    await sb.exec("(sleep 0.3; kill 1) > /dev/null 2>&1 &")  # from the background, between two calls
    await asyncio.sleep(1.5)
    start = time.monotonic()
    for call in (lambda: sb.session.exec("echo hi", timeout=10), lambda: sb.exec("echo hi", timeout=10)):
        with pytest.raises(SandboxCrashed):
            await call()
    assert time.monotonic() - start < 10 and sb.state is SandboxState.FAILED


async def test_pool_discards_a_ready_container_that_died(engine, base_image, run_id):
    async with SandboxPool(base_image, 1, engine=engine, run_id=run_id, reap=False) as pool:
        while pool.ready < 1:  # noqa: ASYNC110 - the pool has no event to wait on
            await asyncio.sleep(0.1)
        (dead,) = await engine.call("containers", filters={"label": f"envgym.run={run_id}"})
        await engine.call("kill", dead["Id"], "SIGKILL")
        async with pool.sandbox() as sb:
            assert sb.id != dead["Id"][:12] and (await sb.session.exec("echo ok")).stdout == "ok\n"
        assert pool.discarded == 1


async def test_copy_out_checks_links_against_the_destination_name(make, tmp_path):
    sb = await make()
    await sb.exec("mkdir -p /work/res && echo s > /work/res/secret && ln -s ../res /work/res/peek")
    with pytest.raises(UnsafeArchive, match="peek"):  # at copy/peek it would lead to tmp_path/res
        await sb.copy_out("/work/res", tmp_path / "copy")
    assert list(tmp_path.iterdir()) == []
    await sb.exec("rm /work/res/peek && ln -s . /work/res/here")
    dest = await sb.copy_out("/work/res", tmp_path / "copy")
    assert (dest / "here" / "secret").read_text() == "s\n"
