import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from vector_fakes import ChaosAgent, ChaosEnv, ChaosFactory, FakeSandbox, fake_tasks

from envgym.errors import SpecError
from envgym.task import TaskSpec
from envgym.types import Outcome
from envgym.vector import EpisodePool, Job


@pytest.fixture(autouse=True)
def _counters():
    ChaosEnv.reset_counters()
    ChaosAgent.open = 0
    yield


def _other_tasks():
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_every_task_yields_one_trajectory_and_envs_are_reused():
    tasks = fake_tasks(20, steps=3)
    async with EpisodePool(ChaosFactory(), concurrency=4, make_env=lambda env_id: ChaosEnv()) as pool:
        seen = [t async for t in pool.run(tasks)]
        assert pool.open_envs == 4 and ChaosEnv.created == 4  # one env per slot, kept across episodes
    assert sorted(t.task_id for t in seen) == [t.id for t in tasks]
    assert {t.outcome for t in seen} == {Outcome.SUCCESS} and all(len(t.steps) == 3 for t in seen)
    assert ChaosEnv.open == 0 and FakeSandbox.running == 0 and ChaosAgent.open == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_random_crashes_and_hangs_lose_no_episode_and_duplicate_none(seed):
    rng = random.Random(seed)

    def make_env(env_id):
        if rng.random() < 0.05:
            raise RuntimeError("image pull failed")
        return ChaosEnv(seed=rng.randrange(2**32), p_crash=0.04, p_hang=0.03)

    tasks = fake_tasks(60, steps=4, step_timeout_s=0.05, episode_timeout_s=5)
    jobs = [Job(task, seed=i, key=i) for i, task in enumerate(tasks)]
    factory = ChaosFactory(seed, p_refuse=0.03, p_crash=0.03, p_hang=0.02)
    async with EpisodePool(factory, concurrency=8, make_env=make_env, close_timeout_s=0.05) as pool:
        finished = [done async for done in pool.run_jobs(jobs)]
    assert sorted(done.job.key for done in finished) == list(range(60))
    assert all(done.trajectory.task_id == done.job.task.id and done.trajectory.seed == done.job.key
               for done in finished)
    outcomes = Counter(done.trajectory.outcome for done in finished)
    assert outcomes[Outcome.SUCCESS] > 0 and outcomes[Outcome.INFRA_ERROR] > 0
    assert set(outcomes) <= {Outcome.SUCCESS, Outcome.FAILURE, Outcome.INFRA_ERROR}  # env bugs and late agents fail
    assert all(done.trajectory.blame is not None and done.trajectory.error
               for done in finished if done.trajectory.outcome is not Outcome.SUCCESS)
    errors = Counter(done.trajectory.error_type for done in finished if done.trajectory.error_type)
    assert {"StepTimeout", "PolicyTimeout", "PolicyError"} & set(errors)
    assert ChaosEnv.created > 8  # broken envs were replaced
    assert ChaosEnv.open == 0 and FakeSandbox.running == 0 and ChaosAgent.open == 0
    assert not _other_tasks()


async def test_a_crashed_env_is_replaced_and_the_pool_goes_on():
    envs = []

    def make_env(env_id):
        envs.append(ChaosEnv(p_crash=1.0 if not envs else 0.0))  # the first env crashes on reset
        return envs[-1]

    async with EpisodePool(ChaosFactory(), concurrency=1, make_env=make_env) as pool:
        outcomes = [t.outcome async for t in pool.run(fake_tasks(3))]
    assert outcomes == [Outcome.INFRA_ERROR, Outcome.SUCCESS, Outcome.SUCCESS]
    assert len(envs) == 2 and all(env.closed for env in envs)


async def test_watchdog_ends_an_episode_that_outlives_its_deadline():
    class Stubborn(ChaosAgent):
        async def close(self):  # ignores the episode deadline by hanging in cleanup
            await asyncio.sleep(3600)

    class Factory(ChaosFactory):
        def create(self, task):
            return Stubborn(self.rng)

    async with EpisodePool(Factory(), concurrency=2, make_env=lambda _: ChaosEnv(p_hang=1.0), grace_s=0.05,
                           close_timeout_s=0.05) as pool:
        trajectories = [t async for t in pool.run(fake_tasks(2, step_timeout_s=None, episode_timeout_s=0.05))]
    assert [t.outcome for t in trajectories] == [Outcome.INFRA_ERROR] * 2
    assert all("grace" in t.error for t in trajectories)
    assert ChaosEnv.open == 0


async def test_slots_refill_at_once_and_stay_bounded():
    order = []

    class Recording(ChaosFactory):
        def create(self, task):
            order.append(task.id)
            return super().create(task)

    long = fake_tasks(1, steps=30)
    short = [t.model_copy(update={"id": f"s{i}"}) for i, t in enumerate(fake_tasks(6, steps=1))]
    async with EpisodePool(Recording(), concurrency=2, make_env=lambda _: ChaosEnv(delay=0.001)) as pool:
        ended = [t.task_id async for t in pool.run(long + short)]
        assert ChaosEnv.max_stepping <= 2
    # every short task started and ended while the long one was still running in the other slot
    assert order == ["t0000", "s0", "s1", "s2", "s3", "s4", "s5"]
    assert ended == ["s0", "s1", "s2", "s3", "s4", "s5", "t0000"]


class _Recording(ChaosFactory):
    """Notes the order in which episodes start (their agent is created at the start)."""

    def __init__(self):
        super().__init__()
        self.started = []

    def create(self, task):
        self.started.append(task.id)
        return super().create(task)


def _hinted_jobs():
    """Six one-step tasks, then a 30-step one: given last, the worst place for it in a finite run."""
    short = [t.model_copy(update={"id": f"s{i}"}) for i, t in enumerate(fake_tasks(6, steps=1))]
    return short + fake_tasks(1, steps=30)


async def _start_order(jobs, *, lazily=False):
    """The task ids in the order their episodes started, two slots, ``jobs`` given as they are or as an iterator."""
    factory = _Recording()
    async with EpisodePool(factory, concurrency=2, make_env=lambda _: ChaosEnv(delay=0.001)) as pool:
        ended = [done.job.task.id async for done in pool.run_jobs(iter(jobs) if lazily else jobs)]
    ids = [job.id if isinstance(job, TaskSpec) else job.task.id for job in jobs]
    assert sorted(ended) == sorted(ids) == sorted(factory.started)  # each job exactly once
    return factory.started


async def test_a_list_of_hinted_jobs_starts_longest_first():
    tasks = _hinted_jobs()
    jobs = [Job(t, key=t.id, cost_hint=t.metadata["steps"]) for t in tasks]
    assert await _start_order(jobs) == ["t0000", "s0", "s1", "s2", "s3", "s4", "s5"]
    # equal hints keep their given order; jobs without a hint come after the hinted ones, in their order
    mixed = [Job(tasks[0], key=0), Job(tasks[1], key=1, cost_hint=2.0), Job(tasks[2], key=2),
             Job(tasks[3], key=3, cost_hint=2.0), Job(tasks[6], key=6, cost_hint=5.0)]
    assert await _start_order(tuple(mixed)) == ["t0000", "s1", "s3", "s0", "s2"]


async def test_without_hints_or_from_an_iterator_the_given_order_is_kept():
    tasks = _hinted_jobs()
    given = [t.id for t in tasks]
    assert await _start_order([Job(t, key=t.id) for t in tasks]) == given
    assert await _start_order(tasks) == given  # bare TaskSpecs carry no hint
    hinted = [Job(t, key=t.id, cost_hint=t.metadata["steps"]) for t in tasks]
    assert await _start_order(hinted, lazily=True) == given  # pulled lazily: the pool cannot look ahead


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_cost_hint_must_be_a_finite_non_negative_number(bad):
    with pytest.raises(SpecError, match="cost_hint"):
        Job(fake_tasks(1)[0], cost_hint=bad)


async def test_tasks_are_pulled_lazily_from_an_async_iterator():
    pulled = []

    async def tasks():
        for task in fake_tasks(10):
            pulled.append(task.id)
            yield task

    async with EpisodePool(ChaosFactory(), concurrency=3, make_env=lambda _: ChaosEnv()) as pool:
        stream = pool.run(tasks())
        first = await anext(stream)
        assert first.task_id == "t0000" and len(pulled) <= 3 + 3  # at most a slot's worth plus the queue
        rest = [t async for t in stream]
    assert len(rest) == 9 and len(pulled) == 10


async def test_failing_task_iterator_stops_the_run_and_cleans_up():
    def tasks():
        yield from fake_tasks(2)
        raise ValueError("bad task file")

    async with EpisodePool(ChaosFactory(), concurrency=2, make_env=lambda _: ChaosEnv()) as pool:
        with pytest.raises(ValueError, match="bad task file"):
            async for _ in pool.run(tasks()):
                pass
    assert ChaosEnv.open == 0 and not _other_tasks()


async def test_cancellation_closes_every_env_agent_and_sandbox():
    tasks = fake_tasks(100, steps=1000)
    all_stepping = asyncio.Event()

    class Signalling(ChaosEnv):
        async def step(self, action):
            if ChaosEnv.stepping == 5:  # this is the sixth env inside step() at once
                all_stepping.set()
            return await super().step(action)

    pool = EpisodePool(ChaosFactory(), concurrency=6, make_env=lambda _: Signalling(delay=0.001))

    async def consume():
        async with pool:
            async for _ in pool.run(tasks):
                pass

    run = asyncio.create_task(consume())
    await all_stepping.wait()
    assert pool.in_flight == 6
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert ChaosEnv.created == 6
    assert ChaosEnv.open == 0 and FakeSandbox.running == 0 and ChaosAgent.open == 0
    assert pool.open_envs == 0 and pool.in_flight == 0
    assert not _other_tasks()


async def test_breaking_out_early_leaves_nothing_behind():
    async with EpisodePool(ChaosFactory(), concurrency=4, make_env=lambda _: ChaosEnv()) as pool:
        async with contextlib.aclosing(pool.run(fake_tasks(50, steps=5))) as stream:
            async for _ in stream:
                break
        assert pool.in_flight == 0 and not _other_tasks()
        assert ChaosAgent.open == 0  # episodes in flight were cancelled and their agents closed
    assert ChaosEnv.open == 0 and FakeSandbox.running == 0


CTRL_C = textwrap.dedent("""
    import asyncio, json, os, signal
    from envgym.vector import EpisodePool
    from vector_fakes import ChaosAgent, ChaosEnv, ChaosFactory, FakeSandbox, fake_tasks

    report = {}

    async def main():
        pool = EpisodePool(ChaosFactory(), concurrency=8, make_env=lambda _: ChaosEnv(delay=0.001))
        try:
            async with pool:
                async for _ in pool.run(fake_tasks(1000, steps=1000)):
                    pass
        finally:
            report.update(envs_created=ChaosEnv.created, envs_open=ChaosEnv.open, agents_open=ChaosAgent.open,
                          sandboxes=FakeSandbox.running, other_tasks=len(asyncio.all_tasks()) - 1)

    async def interrupt():
        while ChaosEnv.stepping < 8:
            await asyncio.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    async def both():
        asyncio.get_running_loop().create_task(interrupt())
        await main()

    try:
        asyncio.run(both())
    except KeyboardInterrupt:
        print(json.dumps(report))
""")


def test_ctrl_c_closes_everything():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", CTRL_C], capture_output=True, text=True, timeout=120, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {"envs_created": 8, "envs_open": 0, "agents_open": 0, "sandboxes": 0, "other_tasks": 0}
