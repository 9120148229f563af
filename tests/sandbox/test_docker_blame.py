"""Whose a dead container was, asked of a real engine: killed or removed from outside is the infrastructure's
(``blame="infra"``, an ``infra_error`` that resume reruns), ``kill 1`` from inside stays the agent's.

Before :mod:`envgym.sandbox.dockerevents`, every crash after the agent's first action was the agent's: a
``docker kill`` from the host of four of an oracle run's containers on swe-toolz left two or three oracle
episodes ``failure`` (blame agent), the run exited 0 and resume did not rerun them (oracle 3/5).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from envgym.rollout import blame_of
from envgym.sandbox import DEFAULT, SandboxCrashed, SandboxState, dockerevents
from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym.types import Blame

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def outside():
    """A Docker client of the test's own: what an operator's ``docker`` command is."""
    import docker

    api = docker.APIClient(version="auto")
    yield api
    api.close()


async def _crash_under(sb, act, *, via_session: bool) -> SandboxCrashed:
    run = sb.session.exec if via_session else sb.exec
    if via_session:
        await sb.session.open()
    command = asyncio.ensure_future(run("sleep 30", timeout=20))
    await asyncio.sleep(0.5)
    await act()
    with pytest.raises(SandboxCrashed) as info:
        await command
    assert sb.state is SandboxState.FAILED
    return info.value


@pytest.mark.parametrize(("signal", "number"), [("SIGKILL", "9"), ("SIGTERM", "15")])
@pytest.mark.parametrize("via_session", [False, True], ids=["exec", "session"])
async def test_a_container_killed_from_outside_is_infra(make, outside, signal, number, via_session):
    sb = await make()
    crash = await _crash_under(sb, lambda: asyncio.to_thread(outside.kill, sb.id, signal), via_session=via_session)
    assert crash.blame == "infra" and blame_of(crash, "env") is Blame.INFRA, crash
    assert f"container {sb.id} killed from outside (signal {number})" in str(crash)
    with pytest.raises(SandboxCrashed, match="killed from outside") as again:  # every later call says the same
        await sb.exec("true")
    assert again.value.blame == "infra"


async def test_a_container_removed_from_outside_is_infra(make, outside):
    sb = await make()
    crash = await _crash_under(sb, lambda: asyncio.to_thread(outside.remove_container, sb.id, force=True),
                               via_session=True)
    assert crash.blame == "infra" and "from outside" in str(crash), crash


@pytest.mark.parametrize("via_session", [False, True], ids=["exec", "session"])
async def test_kill_1_from_inside_stays_the_agents(make, via_session):
    # what the SWE tamper agent kill-init does: no kill event reaches the engine
    sb = await make()
    run = sb.session.exec if via_session else sb.exec
    with pytest.raises(SandboxCrashed) as info:
        await run("kill 1; kill -9 1; sleep 5", timeout=20)
    crash = info.value
    assert crash.blame is None and blame_of(crash, "env") is Blame.AGENT, crash
    assert "no kill from outside" in str(crash)
    with pytest.raises(SandboxCrashed) as again:
        await sb.exec("true")
    assert again.value.blame is None


async def test_the_containers_own_oom_stays_the_agents(make):
    sb = await make(DEFAULT.model_copy(update={"memory": "64m"}))
    await sb.exec("echo 1000 > /proc/1/oom_score_adj")  # the OOM killer at its memory limit takes its init
    with pytest.raises(SandboxCrashed) as info:
        await sb.exec("python3 -c \"x = b'x' * (512 << 20)\"", timeout=30)
    assert info.value.blame is None and "out of memory at its own limit; no kill from outside" in str(info.value)


async def test_our_own_removal_is_not_a_kill_from_outside(engine, base_image, run_id):
    sb = DockerSandbox(base_image, engine=engine, run_id=run_id)
    await sb.start()
    await sb.stop()  # the engine logs a kill (signal 9) for the forced removal: envgym's own
    assert dockerevents.removed_by_envgym(sb.id)
    for _ in range(100):
        if (engine.watching.seen(sb.id) or dockerevents.Seen()).died:
            break
        await asyncio.sleep(0.05)
    assert engine.watching.seen(sb.id).signals == ["9"]  # seen, and not taken for an outside kill:
    assert await dockerevents.outside_cause(engine, sb.id, None, sb._created_wall) == "removed by envgym while in use"


async def test_the_engines_history_tells_when_the_live_stream_did_not_see_it(make, outside):
    # an engine that never subscribed (no sandbox started on it) asks the engine's ring of past events
    sb = await make()
    await asyncio.to_thread(outside.kill, sb.id, "SIGKILL")
    info = await sb._inspect()
    assert abs(dockerevents.created_ns(info["Created"]) / 1e9 - sb._created_wall) < 5  # the engine's clock, parsed
    async with DockerEngine() as blind:
        assert blind.watching is None
        assert await dockerevents.outside_cause(blind, sb.id, info, sb._created_wall) == \
            "killed from outside (signal 9)"


async def test_a_broken_event_stream_is_reopened_and_the_history_covers_the_gap(make, engine, outside):
    sb = await make()
    watch = engine.watching
    assert watch is not None and watch.up_before(sb._created_wall)
    opened = watch.up_since
    watch._stream.close()  # what an engine restart does to every event stream
    for _ in range(100):
        if (watch.up_since or 0) > opened:
            break
        await asyncio.sleep(0.05)
    assert (watch.up_since or 0) > opened and not watch.up_before(sb._created_wall)
    crash = await _crash_under(sb, lambda: asyncio.to_thread(outside.kill, sb.id), via_session=True)
    assert crash.blame == "infra" and "killed from outside (signal 9)" in str(crash), crash


def _event_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "envgym-docker-events" and t.is_alive()]


def _sockets() -> int:
    return sum(os.readlink(f"/proc/self/fd/{fd}").startswith("socket:") for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}"))


async def test_the_subscription_is_one_per_process_and_ends_with_the_last_engine(base_image, run_id):
    assert not _event_threads()
    sockets = _sockets()
    engines = [DockerEngine(), DockerEngine()]
    boxes = [DockerSandbox(base_image, engine=e, run_id=run_id) for e in engines]
    for sb in boxes:
        await sb.start()
    assert len(_event_threads()) == 1 and engines[0].watching is engines[1].watching
    for sb in boxes:
        await sb.stop()
    await engines[0].close()
    assert len(_event_threads()) == 1  # the other engine still uses it
    await engines[1].close()
    assert not _event_threads()
    assert _sockets() == sockets  # its connection and the engines' are closed


def _child(image: str, run_id: str, results: multiprocessing.Queue) -> None:
    async def main() -> tuple[str | None, bool, str]:
        import docker

        async with DockerEngine() as engine:
            sb = DockerSandbox(image, engine=engine, run_id=run_id)
            await sb.start()
            try:
                own = engine.watching is not None and engine.watching.pid == os.getpid()
                await sb.session.open()
                command = asyncio.ensure_future(sb.session.exec("sleep 30", timeout=20))
                await asyncio.sleep(0.5)
                api = docker.APIClient(version="auto")
                api.kill(sb.id)
                api.close()
                try:
                    await command
                except SandboxCrashed as crash:
                    return crash.blame, own, str(crash)
                return None, own, "no crash"
            finally:
                await sb.stop()

    results.put(asyncio.run(main()))


async def test_a_forked_worker_subscribes_for_itself(make, outside, base_image, run_id):
    parent = await make()  # this process's subscription is up when the worker forks
    assert parent.engine.watching is not None
    results: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(base_image, run_id, results))
    child.start()
    blame, own, message = await asyncio.to_thread(results.get, True, 120)
    await asyncio.to_thread(child.join, 30)
    assert child.exitcode == 0
    assert own and blame == "infra" and "killed from outside (signal 9)" in message, message


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]


def _grading(api, container_id: str) -> bool:
    """Whether the container runs the hidden tests (the grader's runner is among its processes)."""
    import docker.errors

    with contextlib.suppress(docker.errors.APIError):
        return any("envgym-grader" in " ".join(p) for p in api.top(container_id)["Processes"] or ())
    return False


@pytest.mark.slow
def test_an_oracle_run_whose_containers_are_killed_from_outside_reruns_them_on_resume(outside, tmp_path):
    # the measurement: `docker kill` from the host of a running oracle run's containers: the first one
    # found running the hidden tests (an episode being graded), then every other one running (episodes at reset
    # or at work, spares)
    import docker.errors

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "envgym.cli", "eval", "--suite", "swe-toolz", "--agent", "oracle", "--limit", "4",
           "--concurrency", "4", "--max-infra-errors", "0", "--out", str(run), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    killed: list[str] = []
    try:
        label = {"label": f"envgym.owner_pid={proc.pid}", "status": "running"}
        deadline = time.monotonic() + 240
        while proc.poll() is None and not killed and time.monotonic() < deadline:
            running = [c["Id"] for c in outside.containers(filters=label)]
            grading = [c for c in running if _grading(outside, c)][:1]
            for c in grading and [*grading, *(c for c in running if c not in grading)]:
                with contextlib.suppress(docker.errors.APIError):  # gone already
                    outside.kill(c)
                    killed.append(c)
            time.sleep(0.05)
        output = proc.communicate(timeout=240)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    records = _records(run)
    print(f"killed {len(killed)} containers, the grading one first:",
          *(f"{r['outcome']} {r['blame']} {r['error']}" for r in records), sep="\n")
    assert killed and "failure" not in [r["outcome"] for r in records], output[-3000:]  # none charged to the oracle
    infra = [r for r in records if r["outcome"] == "infra_error"]
    assert infra and all(r["blame"] == "infra" and "from outside" in r["error"] for r in infra), output[-3000:]
    assert any(f"container {killed[0][:12]} killed from outside" in r["error"] for r in infra)  # at grading
    assert proc.returncode == 3 and "infra_error" in output, output[-3000:]

    resumed = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    latest = {r["task_hash"]: r for r in _records(run)}  # a rerun's record supersedes the infra error
    assert len(latest) == 4 and {r["outcome"] for r in latest.values()} == {"success"}
    assert sorted(r["attempt"] for r in latest.values() if r["attempt"] > 1) == [2] * len(infra)
