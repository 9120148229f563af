"""Channels (``Sandbox.channel``): a long-lived JSON-lines process in a sandbox, and the pool's warm-up hook."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from envgym.sandbox import ChannelClosed, FakeSandbox, SandboxCrashed, SandboxError, SandboxPool, SandboxState

ECHO = textwrap.dedent("""
    import json, os, sys
    print(json.dumps({"hello": os.getpid()}), flush=True)
    for line in iter(sys.stdin.readline, ""):
        req = json.loads(line)
        if req.get("op") == "die":
            os._exit(3)
        if req.get("op") == "bad":
            print(json.dumps({"ok": False, "kind": "action", "error": "bad input"}), flush=True)
            continue
        print(json.dumps({"ok": True, "echo": req, "user": os.getuid(), "x": os.environ.get("X"),
                          "cwd": os.getcwd()}), flush=True)
""")


@pytest.mark.docker
async def test_channel_round_trips_errors_and_faults(make):
    sb = await make()
    ch = await sb.channel(["python3", "-u", "-c", ECHO], user="nobody", env={"X": "x1"}, cwd="/tmp")
    assert ch.pid in sb.helper_pids  # spared by timeout kills like the session helper
    reply = await ch.call({"op": "ping", "n": 1}, timeout=10)
    assert reply == {"ok": True, "echo": {"op": "ping", "n": 1}, "user": 65534, "x": "x1", "cwd": "/tmp"}
    assert await ch.call({"op": "bad"}, timeout=10) == {"ok": False, "kind": "action", "error": "bad input"}
    # a timed-out command's sweep spares the channel's process
    assert (await sb.exec("sleep 30", timeout=1)).timed_out
    assert (await ch.call({"op": "ping"}, timeout=10))["ok"]
    with pytest.raises(ChannelClosed):  # the process ended while the container runs
        await ch.call({"op": "die"}, timeout=10)
    assert sb.state is SandboxState.RUNNING
    with pytest.raises(ChannelClosed):
        await ch.call({"op": "ping"}, timeout=10)

    other = await sb.channel(["python3", "-u", "-c", ECHO])
    await other.close()
    with pytest.raises(ChannelClosed, match="closed"):
        await other.call({"op": "ping"}, timeout=10)

    with pytest.raises(SandboxError, match="did not say hello"):
        await sb.channel(["python3", "-c", "print('{\"hi\": 1}')"], timeout=10)
    with pytest.raises(ChannelClosed):
        await sb.channel(["sh", "-c", "exit 1"], timeout=10)

    last = await sb.channel(["python3", "-u", "-c", ECHO])
    await sb.exec(["kill", "1"], timeout=10)  # the container dies: a crash, not a closed channel
    with pytest.raises(SandboxCrashed):
        await last.call({"op": "ping"}, timeout=10)


@pytest.mark.docker
async def test_stop_closes_open_channels(make):
    sb = await make()
    ch = await sb.channel(["python3", "-u", "-c", ECHO])
    await sb.stop()
    assert ch.pid is None


async def test_backends_without_channels_say_so():
    async with FakeSandbox() as sb:
        with pytest.raises(SandboxError, match="fake backend has no channels"):
            await sb.channel(["true"])
        with pytest.raises(ValueError, match="non-empty list"):
            await sb.channel("python3 x.py")  # type: ignore[arg-type]


async def test_pool_warm_up_runs_before_hand_out_and_failures_surface():
    warmed: list[FakeSandbox] = []

    async def warm_up(sb):
        await asyncio.sleep(0)
        await sb.write("/warm", "yes")
        warmed.append(sb)

    async with SandboxPool("fake", 2, factory=FakeSandbox, warm_up=warm_up) as pool, pool.sandbox() as sb:
        assert sb in warmed and await sb.read("/warm") == b"yes"

    made: list[FakeSandbox] = []

    def factory():
        made.append(FakeSandbox())
        return made[-1]

    async def broken(sb):
        raise RuntimeError("warm-up failed")

    async with SandboxPool("fake", 1, factory=factory, warm_up=broken) as pool:
        with pytest.raises(RuntimeError, match="warm-up failed"):
            await pool.acquire()
    assert made and all(sb.state is SandboxState.STOPPED for sb in made)
