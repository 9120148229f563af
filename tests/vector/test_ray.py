"""The Ray backend on a local cluster of three simulated hosts (a head with no CPUs, three nodes of 8 slots).

One cluster serves the module (starting one costs 10-40 s on two cores); a test that removes a node adds
one back. Envs are built on the hosts from ``ray_fakes`` (sent by value) or from the installed families.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("ray")

import ray
import ray_fakes
from ray import cloudpickle

from envgym.agents import NullConfig, OracleConfig
from envgym.eval import EvalConfig, evaluate
from envgym.record import read_records
from envgym.types import Outcome
from envgym.vector import Job
from envgym.vector.ray import HOST_RESOURCE, HostLost, NoHosts, RayEpisodePool, local_cluster

pytestmark = pytest.mark.slow
cloudpickle.register_pickle_by_value(ray_fakes)  # the hosts cannot import this test folder

HOSTS, SLOTS = 3, 8


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(HOSTS, slots=SLOTS) as local:
        yield local


@pytest.fixture
def hosts(cluster):
    """The cluster with its three hosts, restored after a test that removed one."""
    yield cluster
    while len(cluster.nodes) < HOSTS:
        cluster.add_host()
    cluster.cluster.wait_for_nodes()


def _pool(**kwargs):
    return RayEpisodePool(OracleConfig(), make_env=kwargs.pop("make_env", ray_fakes.make_sleepy), **kwargs)


def test_the_cluster_listens_on_loopback_only(cluster):
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}
    assert sorted(n["Resources"].get(HOST_RESOURCE, 0) for n in nodes) == [0, SLOTS, SLOTS, SLOTS]
    assert cluster.address.startswith("127.0.0.1:")


async def test_every_job_streams_back_once_from_the_least_loaded_hosts(hosts):
    tasks = ray_fakes.sleepy_tasks(120, sleep=0.02)
    async with _pool() as pool:
        assert len(pool.live_hosts) == HOSTS and pool.slots == HOSTS * SLOTS
        jobs = [Job(task, seed=i, key=i) for i, task in enumerate(tasks)]
        seen = [(done.job.key, done.trajectory) async for done in pool.run_jobs(jobs)]
        final = await pool.aclose()
    assert sorted(key for key, _ in seen) == list(range(120))
    assert all(t.outcome is Outcome.SUCCESS and t.reward == 1.0 and t.task_id == tasks[k].id for k, t in seen)
    per_host = Counter(t.host for _, t in seen)
    assert len(per_host) == HOSTS and min(per_host.values()) >= 120 // HOSTS // 3  # the work is spread
    assert all(label.startswith(socket.gethostname() + ":") for label in per_host)
    assert sorted(final) == sorted(per_host) and all(s["open_envs"] == 0 for s in final.values())


async def test_a_hinted_list_is_dispatched_longest_first(hosts):
    tasks = ray_fakes.sleepy_tasks(2 * HOSTS * SLOTS, sleep=0.01)
    long = set(range(len(tasks) - SLOTS, len(tasks)))  # given last: the worst place for long episodes
    jobs = [Job(task, key=i, cost_hint=10.0 if i in long else 1.0) for i, task in enumerate(tasks)]
    async with _pool(prefetch=0) as pool:
        done = [d async for d in pool.run_jobs(jobs)]
    assert sorted(d.job.key for d in done) == list(range(len(tasks)))
    first_wave = sorted(done, key=lambda d: d.trajectory.timing.started_at)[:HOSTS * SLOTS]
    assert long <= {d.job.key for d in first_wave}  # every long one started in the first wave


async def test_a_node_removed_mid_run_costs_only_its_in_flight_episodes(hosts):
    tasks = ray_fakes.sleepy_tasks(300, sleep=0.1)
    keys: list[int] = []
    async with _pool() as pool:
        victim = pool.live_hosts[0]
        async for done in pool.run_jobs(Job(task, key=i) for i, task in enumerate(tasks)):
            keys.append(done.job.key)
            assert done.trajectory.outcome is Outcome.SUCCESS, done.trajectory.error
            if len(keys) == 60:
                index = next(i for i, n in enumerate(hosts.nodes) if n.node_id == victim.node_id)
                await asyncio.to_thread(hosts.remove_host, index)
        assert pool.lost == [victim.label] and not victim.alive
        assert pool.redispatched >= 1  # its in-flight episodes ran again elsewhere
    assert sorted(keys) == list(range(300))  # exactly once each


async def test_attempts_run_out_into_infra_error_and_the_node_gets_a_new_actor(hosts):
    tasks = ray_fakes.sleepy_tasks(60, sleep=0.3)
    results = {}
    async with _pool(max_attempts=1) as pool:
        victim = pool.live_hosts[0]
        async for done in pool.run_jobs(Job(task, key=i) for i, task in enumerate(tasks)):
            results[done.job.key] = done.trajectory
            if len(results) == 10:
                ray.kill(victim.actor)
        assert not victim.alive and pool.redispatched == 0
        lost = [t for t in results.values() if t.outcome is Outcome.INFRA_ERROR]
        assert lost and all(t.error_type == HostLost.__name__ and t.host == victim.label for t in lost)
        assert "1 attempt(s) of at most 1" in lost[0].error
        assert len(lost) <= SLOTS + pool.prefetch  # only what was in flight there
        for _ in range(100):  # the node lives: the pool starts a new actor on it
            if len(pool.live_hosts) == HOSTS:
                break
            await asyncio.sleep(0.1)
        assert len(pool.live_hosts) == HOSTS
    assert sorted(results) == list(range(60))


async def test_a_slow_host_does_not_stall_the_others(hosts):
    slow = hosts.nodes[0].node_id
    tasks = ray_fakes.sleepy_tasks(96, sleep=0.05)
    async with _pool(make_env=ray_fakes.SlowOn(slow, 30.0), prefetch=0) as pool:
        by_host = Counter()
        async for done in pool.run_jobs(tasks):
            by_host[done.trajectory.host] += 1
        slow_label = next(h.label for h in pool.live_hosts if h.node_id == slow)
    fast = [n for label, n in by_host.items() if label != slow_label]
    # a slow episode takes 30x as long: the slow host runs about its first round of 8 while the others do the rest
    assert len(fast) == HOSTS - 1 and by_host[slow_label] <= 2 * SLOTS and sum(fast) >= 96 - 2 * SLOTS


async def test_cancelling_the_run_cancels_every_hosts_episodes(hosts):
    tasks = ray_fakes.sleepy_tasks(100, sleep=30)
    pool = _pool()
    await pool.start()

    async def consume():
        async for _ in pool.run(tasks):
            pass

    run = asyncio.create_task(consume())
    for _ in range(200):
        stats = await pool.host_stats()
        if sum(s["in_flight"] for s in stats.values()) == HOSTS * SLOTS:
            break
        await asyncio.sleep(0.1)
    assert all(s["in_flight"] == SLOTS for s in stats.values())
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    stats = await pool.host_stats()
    assert all(s["in_flight"] == 0 and s["active"] == 0 for s in stats.values()), stats
    final = await pool.aclose()
    assert len(final) == HOSTS and all(s["open_envs"] == 0 for s in final.values())


async def test_no_hosts_is_a_clear_error(cluster):
    with pytest.raises(NoHosts, match="envgym_missing"):
        await RayEpisodePool(OracleConfig(), resource="envgym_missing").start()


def _verdicts(run_dir):
    records, _ = read_records(run_dir / "records.jsonl")
    return {(r.task_id, r.run_index): (r.outcome, r.score, r.passed, r.steps, r.seed) for r in records}, records


@pytest.mark.parametrize("agent", [OracleConfig(), NullConfig()], ids=["oracle", "null"])
async def test_a_tool_suite_gives_the_local_pools_verdicts(hosts, tmp_path, agent):
    config = EvalConfig(suites=("tool-retail",), agent=agent, limit=6, runs=2)
    await evaluate(config, tmp_path / "local", concurrency=4)
    summary = await evaluate(config, tmp_path / "ray", ray="auto")
    local, _ = _verdicts(tmp_path / "local")
    remote, records = _verdicts(tmp_path / "ray")
    assert summary.ran == 12 and remote == local
    assert all(r.host for r in records) and len({r.host for r in records}) > 1  # spread, each names its host


async def test_an_interrupted_ray_run_resumes_without_duplicates(hosts, tmp_path):
    # enough episodes that the cancel lands before the last: with 12, a fast host had finished all of them
    config = EvalConfig(suites=("tool-retail",), agent=OracleConfig(), limit=6, runs=20)
    seen, five = [], asyncio.Event()

    def on_record(record):
        seen.append(record)
        if len(seen) == 3:
            five.set()

    run = asyncio.create_task(evaluate(config, tmp_path / "run", ray="auto", on_record=on_record))
    await five.wait()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    partial, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert 3 <= len(partial) < 120
    summary = await evaluate(config, tmp_path / "run", ray="auto")
    records, _ = read_records(tmp_path / "run" / "records.jsonl")
    assert summary.skipped == len(partial) and summary.ran == 120 - len(partial)
    assert len(records) == 120 and len({r.key for r in records}) == 120


@pytest.mark.docker
async def test_a_swe_suite_gives_the_local_pools_verdicts_in_containers(hosts, tmp_path):
    for agent, limit in ((OracleConfig(), 2), (NullConfig(), 1)):
        config = EvalConfig(suites=("swe-toolz",), agent=agent, limit=limit)
        await asyncio.gather(evaluate(config, tmp_path / f"local-{agent.type}", concurrency=2),
                             evaluate(config, tmp_path / f"ray-{agent.type}", ray="auto"))
        local, _ = _verdicts(tmp_path / f"local-{agent.type}")
        remote, records = _verdicts(tmp_path / f"ray-{agent.type}")
        assert remote == local and len(remote) == limit and all(r.host for r in records)
        assert {outcome for outcome, *_ in remote.values()} == (
            {Outcome.SUCCESS} if agent.type == "oracle" else {Outcome.FAILURE})


def _host_containers(client) -> set[str]:
    """Ids of envgym containers whose owner is a Ray worker (a host actor) of this machine."""
    from envgym.sandbox.reaper import OWNER_PID

    found = set()
    for c in client.containers(all=True, filters={"label": "envgym.managed=1"}):
        pid = c["Labels"].get(OWNER_PID, "")
        with contextlib.suppress(OSError):
            if pid.isdigit() and Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
                found.add(c["Id"])
    return found


@pytest.mark.docker
def test_ctrl_c_on_the_driver_leaves_no_container_on_any_host(hosts, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from envgym.sandbox.docker import connect

    client = connect()
    before = _host_containers(client)
    cmd = [sys.executable, "-m", "envgym.cli", "eval", "--suite", "swe-toolz", "--agent", "oracle", "--limit", "4",
           "--ray", hosts.address, "--out", str(tmp_path / "run"), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 240
        while not (_host_containers(client) - before) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        started = _host_containers(client) - before
        assert started, "no container started on a host"
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=180)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output[-2000:]
    left = {c["Id"] for c in client.containers(all=True)} & started
    assert not left, f"{len(left)} of the {len(started)} containers the hosts started are still there"
    client.close()


async def test_train_rollouts_from_ray_hosts_are_the_local_runs(hosts, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from envgym.rl.models import tiny_policy
    from envgym.rl.train.config import recipe
    from envgym.rl.train.trainer import Trainer
    from envgym.vector import ray as ray_backend

    closed = []
    aclose = ray_backend.RayEpisodePool.aclose

    async def recording_aclose(self):
        final = await aclose(self)
        closed.append(final)
        return final

    monkeypatch.setattr(ray_backend.RayEpisodePool, "aclose", recording_aclose)
    config = recipe("tiny", steps=2, gen_batch=1, prefix_cache=0)  # batch-invariant generation: bitwise runs
    local = await Trainer(config, tmp_path / "local", policy=tiny_policy(seed=0)).run()
    remote = await Trainer(config, tmp_path / "ray", policy=tiny_policy(seed=0), ray="auto").run()
    timing = {"wait_s", "train_s", "step_s", "wall_s", "samples_per_s", "tokens_per_s"}
    assert [{k: v for k, v in line.items() if k not in timing} for line in remote.metrics] == [
        {k: v for k, v in line.items() if k not in timing} for line in local.metrics]
    assert sum(line["samples"] for line in remote.metrics) > 0 and all(line["infra_errors"] == 0
                                                                        for line in remote.metrics)
    episodes = sum(s["episodes"] for s in closed[-1].values())
    assert episodes == config.steps * config.episodes_per_step  # every rollout ran on a host


def test_eval_with_no_cluster_at_the_address_is_one_line(tmp_path):
    import subprocess
    import sys

    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result = subprocess.run([sys.executable, "-m", "envgym.cli", "eval", "--suite", "tool-retail", "--agent",
                             "oracle", "--limit", "1", "--ray", f"127.0.0.1:{port}", "--out", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in result.stderr
