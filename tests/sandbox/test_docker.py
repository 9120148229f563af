"""The Docker backend against a real engine: hardening, faults, tree kills, copy-out, pool, reaper."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from envgym.sandbox import (
    DEFAULT,
    STRICT,
    ExecTimeout,
    ImageMissing,
    SandboxCrashed,
    SandboxFileNotFound,
    SandboxPool,
    SandboxState,
    UnsafeArchive,
)
from envgym.sandbox.docker import DockerSandbox
from envgym.sandbox.reaper import reap

pytestmark = pytest.mark.docker


async def test_exec_and_session_results(make):
    sb = await make()
    for run in (sb.exec, sb.session.exec):
        r = await run("echo out; echo err >&2; pwd; echo $X; id -un; exit 3", env={"X": "x1"}, cwd="/tmp")
        assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n/tmp\nx1\nroot\n", "err\n")
        assert (await run(["id", "-un"], user="nobody")).stdout == "nobody\n"
        r = await run("head -c 300000 /dev/zero | tr '\\0' x; echo tail >&2", max_output=1000)
        assert r.truncated and r.stdout == "x" * 1000 and r.stderr == "tail\n" and r.exit_code == 0


async def test_timeout_kills_the_whole_tree(make):
    sb = await make()
    for i, run in enumerate((sb.exec, sb.session.exec)):
        r = await run(f"echo started; sleep 31{i} & setsid sh -c 'sleep 32{i}' & (sleep 33{i} &); sleep 34{i}",
                      timeout=1)
        assert r.timed_out and r.exit_code is None and r.stdout == "started\n"
        left = await sb.exec("ps -eo args")
        assert f"sleep 3{i}" not in left.stdout.replace("sleep 3600", ""), left.stdout


async def test_default_profile_is_applied(make, engine, run_id):
    sb = await make()
    info = await engine.call("inspect_container", sb.id)
    hc, labels = info["HostConfig"], info["Config"]["Labels"]
    assert hc["Init"] and hc["NetworkMode"] == "none" and hc["CapDrop"] == ["ALL"]
    assert hc["SecurityOpt"] == ["no-new-privileges"] and hc["Memory"] == hc["MemorySwap"] > 0
    assert hc["PidsLimit"] == DEFAULT.pids_limit and hc["NanoCpus"] > 0 and hc["LogConfig"]["Type"] == "none"
    assert not hc["Binds"] and not hc["Devices"] and not hc["Privileged"]
    assert labels["envgym.run"] == run_id and labels["envgym.owner_pid"] == str(os.getpid())
    assert float(labels["envgym.expires"]) > 0
    r = await sb.exec("ls /sys/class/net; grep CapEff /proc/self/status; cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                      "ps -o args= --ppid 1; ulimit -n; ulimit -f")
    lines = r.stdout.split("\n")
    assert lines[0] == "lo" and lines[1].split() == ["CapEff:", "0000000000000000"]  # loopback only, no caps
    assert lines[2].startswith("/sbin/docker-init") and lines[3] == f"sleep {DEFAULT.lifetime_s}"
    assert lines[4] == str(DEFAULT.nofile) and int(lines[5]) * 512 == DEFAULT.fsize_bytes


async def test_strict_profile(make):
    sb = await make(STRICT)
    r = await sb.session.exec("id -u; touch /etc/x || echo ro; df -k /work | tail -1")
    uid, ro, df = r.stdout.strip().split("\n")
    assert (uid, ro) == ("65534", "ro") and df.startswith("tmpfs")
    await sb.write("/work/a/b.txt", "B")
    assert await sb.read("/work/a/b.txt") == b"B"
    assert (await sb.exec("cat /work/a/b.txt")).stdout == "B"


async def test_fork_bomb_stays_inside_the_pids_limit(make):
    sb = await make(DEFAULT.model_copy(update={"pids_limit": 64}))
    bomb = asyncio.ensure_future(sb.session.exec(
        ["python3", "-c", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass"], timeout=4))
    await asyncio.sleep(1.5)
    host = await asyncio.create_subprocess_exec("true")  # the host can still start processes
    assert await host.wait() == 0
    r = await bomb
    assert r.timed_out
    pids = await sb.exec("ls /proc | grep -c '^[0-9]'")
    assert int(pids.stdout) < 10  # everything the bomb started is gone
    assert (await sb.session.exec("echo alive")).stdout == "alive\n"


async def test_memory_bomb_is_reported_as_an_oom_kill(make):
    sb = await make(DEFAULT.model_copy(update={"memory": "64m"}))
    hog = "python3 -c \"x = b'x' * (512 << 20)\""
    for run in (sb.exec, sb.session.exec):
        r = await run(hog, timeout=60)
        assert r.oom_killed and r.exit_code == 137, r
    r = await sb.exec("exit 137")
    assert r.exit_code == 137 and not r.oom_killed


async def test_files_and_copy_out_refuses_planted_links(make, tmp_path):
    sb = await make()
    await sb.write("/work/out/f.txt", b"\x00\x01data", mode=0o600)
    assert await sb.read("/work/out/f.txt") == b"\x00\x01data"
    with pytest.raises(SandboxFileNotFound):
        await sb.read("/work/nope")
    for target in ("/etc/shadow", "../../../etc", "../.."):
        await sb.exec(f"rm -f /work/out/evil; ln -s {target} /work/out/evil")
        with pytest.raises(UnsafeArchive, match="evil"):
            await sb.copy_out("/work/out", tmp_path / "out")
        assert not (tmp_path / "out").exists()
    await sb.exec("ln -s /etc /work/etc-link")
    with pytest.raises(UnsafeArchive):
        await sb.copy_out("/work/etc-link", tmp_path / "etc")
    await sb.exec("rm /work/out/evil; ln -s f.txt /work/out/good")
    dest = await sb.copy_out("/work/out", tmp_path / "out")
    assert (dest / "good").is_symlink() and (dest / "good").read_bytes() == b"\x00\x01data"
    await sb.copy_in(dest, "/work/in")
    assert (await sb.exec("readlink /work/in/out/good; cat /work/in/out/f.txt")).stdout == "f.txt\n\x00\x01data"
    with pytest.raises(SandboxFileNotFound):
        await sb.copy_out("/work/missing", tmp_path / "missing")


async def test_container_killed_mid_command_is_a_crash(make, engine):
    for via_session in (False, True):
        sb = await make()
        run = sb.session.exec if via_session else sb.exec
        if via_session:
            await sb.session.open()
        command = asyncio.ensure_future(run("sleep 30", timeout=20))
        await asyncio.sleep(0.5)
        await engine.call("kill", sb.id, "SIGKILL")
        with pytest.raises(SandboxCrashed):
            await command
        assert sb.state is SandboxState.FAILED
        with pytest.raises(SandboxCrashed):  # and on every later call: never another type
            await sb.exec("true")


async def test_paused_container_times_out_at_the_deadline(make, engine):
    sb = await make()
    await sb.session.open()
    loop = asyncio.get_running_loop()
    try:
        for run in (sb.exec, sb.session.exec):
            command = asyncio.ensure_future(run("sleep 30", timeout=2))
            await asyncio.sleep(0.5)
            await engine.call("pause", sb.id)
            start = loop.time()
            with pytest.raises(ExecTimeout, match="paused"):
                await command
            assert loop.time() - start >= 1.0  # not before the deadline
            await engine.call("unpause", sb.id)
    finally:
        with contextlib.suppress(Exception):
            await engine.call("unpause", sb.id)


CONTROLLER = textwrap.dedent("""
    import asyncio, json, sys
    from envgym.sandbox.docker import DockerSandbox
    async def main():
        sb = DockerSandbox(sys.argv[1], run_id=sys.argv[2])
        await sb.start()
        print(json.dumps(sb.id), flush=True)
        await asyncio.sleep(600)
    asyncio.run(main())
""")


async def test_reaper_removes_containers_of_a_killed_controller(engine, base_image, run_id):
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", CONTROLLER, base_image, run_id,
                                                stdout=asyncio.subprocess.PIPE)
    cid = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert (await engine.call("inspect_container", cid))["State"]["Running"]  # orphaned, still running
    await engine.call("pause", cid)  # a frozen orphan too: a plain forced removal would hang on it
    removed = dict(await reap(engine))
    assert removed.get(cid) == "owner process gone"
    assert not await engine.call("containers", all=True, filters={"id": cid})


async def test_pool_hands_out_fresh_containers_once(engine, base_image, run_id):
    async with SandboxPool(base_image, 2, engine=engine, run_id=run_id) as pool:
        got = [await pool.acquire() for _ in range(3)]
        try:
            assert len({sb.id for sb in got}) == 3
            for sb in got:
                assert (await sb.session.exec("echo ok")).stdout == "ok\n"
        finally:
            for sb in got:
                await sb.stop()
    # close() stopped the ready ones: the autouse fixture checks nothing of this run is left


async def test_missing_image_is_typed(engine, run_id):
    with pytest.raises(ImageMissing, match="envgym sandbox build"):
        await DockerSandbox("envgym/does-not-exist:0", engine=engine, run_id=run_id).start()
    async with SandboxPool("envgym/does-not-exist:0", 1, engine=engine, run_id=run_id, reap=False) as pool:
        with pytest.raises(ImageMissing):
            await pool.acquire()


def test_python_image_builds_offline_once():
    from envgym.sandbox.images import build

    build(["python"])  # first build on a fresh machine: pip download on the host, install with network none
    assert build(["python"]) == [(t, False) for t, _ in build(["python"])]  # content-hash tags: no rebuild
    tag = build(["python"])[1][0]
    out = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "python3", "-m", "pytest", "--version"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("pytest ")
