"""Per-step overhead of the vector layer on a no-op environment, against Gymnasium's vector envs on the same calls.

Every row steps ``--envs`` no-op envs ``--steps`` times each and reports microseconds per env-step, the
median of ``--repeats`` (>= 3) runs; the rows of one run are measured back to back, so load on a shared
machine hits all of them alike. Times are this process's CPU time (``time.process_time``), which other
processes on a busy machine do not inflate as they do wall time; the wall-time median is shown beside it,
and the Gymnasium AsyncVectorEnv row (its work is in subprocesses) is wall time only.

The env calls are the same on both sides of every comparison:

- "bare" rows: the calls alone in a plain loop: ``await env.step()`` on the wrapped envgym no-op env (what
  ``envgym.make`` returns around every env), plus ``await agent.act()`` for the pool and channel rows.
- "Sync (same calls)": Gymnasium's ``SyncVectorEnv`` over a Gymnasium env whose ``step`` makes exactly those
  calls (the coroutines never suspend, so they are driven to the end in place).
- "overhead" = the row minus its bare calls, per run, median over runs; "vs Sync" = the row's time per
  env-step over Sync's on the same calls.

Targets: overhead <= 20 µs per env-step for lockstep and the pool, <= 15 µs for the Channel. The pool rows
run ``run_episode`` as the pool does; the task's deadlines (``asyncio.timeout`` per agent call and env step)
are part of the cost, so a row without deadlines shows it apart. The load average is printed with the table.

    python benchmarks/vector_overhead.py [--envs 16] [--steps 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Coroutine
from typing import Any

import gymnasium
import numpy as np

from envgym.agent import Agent
from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Limits, Observation, Verdict
from envgym.vector import AsyncVectorEnv, Channel, EpisodePool
from envgym.verify.spec import AnswerSpec
from envgym.wrappers import OrderEnforcing, TimeLimit

OBS = Observation(text="")
ACTION = Action(text="noop")
PASS = Verdict(score=1.0, passed=True)
FOREVER = 10**9


class NoopEnv(Env):
    """Ends after ``task.metadata['steps']`` steps (never, for lockstep: no task)."""

    async def reset(self, *, task=None, seed=None, options=None):
        self.task, self.left = task, (task.metadata["steps"] if task else 0)
        return OBS, {}

    async def step(self, action):
        self.left -= 1
        if self.left == 0:
            return StepResult(OBS, 1.0, True, False, {"verdict": PASS})
        return StepResult(OBS, 0.0, False, False, {})

    async def verify(self):
        return PASS


def noop_env() -> Env:
    return OrderEnforcing(TimeLimit(NoopEnv()))  # what envgym.make returns around every env


class NoopAgent(Agent):
    async def act(self, observation):
        return ACTION


class NoopFactory:
    def create(self, task):
        return NoopAgent()

    def describe(self):
        return {}

    async def aclose(self):
        pass


def tasks(n: int, steps: int, deadlines: bool) -> list[TaskSpec]:
    limits = Limits(max_steps=steps + 1) if deadlines else Limits(max_steps=steps + 1, episode_timeout_s=None,
                                                                   step_timeout_s=None)
    return [TaskSpec(id=f"noop-{i}", env_id="bench/noop-v1", instruction="", metadata={"steps": steps},
                     limits=limits, verifiers=(AnswerSpec(kind="exact", expected=""),)) for i in range(n)]


def finish(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (the no-op env's and agent's) to its end, without a loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the no-op coroutine suspended")


class GymNoop(gymnasium.Env):
    """A Gymnasium env doing nothing (``same_calls=False``) or making the envgym rows' calls in its step."""

    observation_space = gymnasium.spaces.Discrete(2)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, same_calls: bool = False, with_agent: bool = False) -> None:
        self.same_calls, self.with_agent = same_calls, with_agent
        self.env, self.agent = noop_env(), NoopAgent()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.same_calls:
            finish(self.env.reset(task=tasks(1, FOREVER, True)[0]))
        return 0, {}

    def step(self, action):
        if self.same_calls:
            if self.with_agent:
                finish(self.agent.act(OBS))
            finish(self.env.step(ACTION))
        return 0, 0.0, False, False, {}


class Timer:
    """CPU and wall seconds from ``start()`` to ``per_step(n)``, per env-step."""

    def start(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def per_step(self, n: int) -> tuple[float, float]:
        return (time.process_time() - self.cpu) / n, (time.perf_counter() - self.wall) / n


async def bare_envgym(n: int, steps: int, with_agent: bool) -> tuple[float, float]:
    envs = [noop_env() for _ in range(n)]
    for env in envs:
        await env.reset(task=tasks(1, FOREVER, True)[0])
    agent, timer = NoopAgent(), Timer()
    timer.start()
    for _ in range(steps):
        for env in envs:
            if with_agent:
                await agent.act(OBS)
            await env.step(ACTION)
    return timer.per_step(n * steps)


async def lockstep(n: int, steps: int) -> tuple[float, float]:
    async with AsyncVectorEnv([noop_env] * n) as envs:
        await envs.reset(options={"task": tasks(1, FOREVER, True)[0]})
        actions, timer = [ACTION] * n, Timer()
        timer.start()
        for _ in range(steps):
            await envs.step(actions)
        return timer.per_step(n * steps)


async def pool(n: int, steps: int, deadlines: bool) -> tuple[float, float]:
    work, timer = tasks(n, steps, deadlines), Timer()
    timer.start()
    async with EpisodePool(NoopFactory(), concurrency=n, make_env=lambda _: noop_env()) as p:
        async for _ in p.run(work):
            pass
    return timer.per_step(n * steps)


async def channel(n: int, steps: int) -> tuple[float, float]:
    work, timer = tasks(n, steps, True), Timer()
    timer.start()
    async with Channel(work, concurrency=n, make_env=lambda _: noop_env()) as ch:
        while not (batch := await ch.recv(min_batch=n)).done:
            ch.send(dict.fromkeys((r.episode_id for r in batch.ready), ACTION))
    return timer.per_step(n * steps)


def bare_gym(n: int, steps: int) -> tuple[float, float]:
    env, timer = GymNoop(), Timer()
    env.reset()
    timer.start()
    for _ in range(n * steps):
        env.step(0)
    return timer.per_step(n * steps)


def gym_vector(cls: Any, n: int, steps: int, **env_kwargs: Any) -> tuple[float, float]:
    envs = cls([lambda: GymNoop(**env_kwargs)] * n)
    try:
        envs.reset(seed=0)
        actions, timer = np.zeros(n, dtype=np.int64), Timer()
        timer.start()
        for _ in range(steps):
            envs.step(actions)
        return timer.per_step(n * steps)
    finally:
        envs.close()


def one_run(n: int, steps: int) -> dict[str, tuple[float, float]]:
    sync = gymnasium.vector.SyncVectorEnv
    return {
        "bare_gym": bare_gym(n, steps),
        "sync": gym_vector(sync, n, steps),
        "async": gym_vector(gymnasium.vector.AsyncVectorEnv, n, max(200, steps // 10)),  # a process hop per step
        "bare_env": asyncio.run(bare_envgym(n, steps, False)),
        "bare_env_agent": asyncio.run(bare_envgym(n, steps, True)),
        "sync_same": gym_vector(sync, n, steps, same_calls=True),
        "sync_same_agent": gym_vector(sync, n, steps, same_calls=True, with_agent=True),
        "lockstep": asyncio.run(lockstep(n, steps)),
        "pool": asyncio.run(pool(n, steps, True)),
        "pool_nodl": asyncio.run(pool(n, steps, False)),
        "channel": asyncio.run(channel(n, steps)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000, help="steps per env per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs; every row reports its median (>= 3)")
    args = parser.parse_args()
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (medians)")
    load_before = os.getloadavg()
    one_run(args.envs, 50)  # warm up imports and caches
    runs = [one_run(args.envs, args.steps) for _ in range(args.repeats)]

    def cpu(key: str) -> float:
        return statistics.median(run[key][0] for run in runs)

    def wall(key: str) -> float:
        return statistics.median(run[key][1] for run in runs)

    def overhead(key: str, bare: str, index: int = 0) -> float:
        return statistics.median(run[key][index] - run[bare][index] for run in runs)

    # (label, key, its bare calls, Sync over the same calls, target µs); None: no such comparison
    rows = [
        ("gymnasium SyncVectorEnv (no-op gym env)", "sync", "bare_gym", "sync", None),
        ("gymnasium AsyncVectorEnv (processes, wall)", "async", "bare_gym", "sync", None),
        ("gymnasium SyncVectorEnv (envgym env.step)", "sync_same", "bare_env", "sync_same", None),
        ("gymnasium SyncVectorEnv (act + env.step)", "sync_same_agent", "bare_env_agent", "sync_same_agent", None),
        ("envgym AsyncVectorEnv lockstep", "lockstep", "bare_env", "sync_same", 20),
        ("envgym EpisodePool (task deadlines)", "pool", "bare_env_agent", "sync_same_agent", 20),
        ("envgym EpisodePool (no deadlines)", "pool_nodl", "bare_env_agent", "sync_same_agent", 20),
        ("envgym Channel send/recv", "channel", "bare_env_agent", "sync_same_agent", 15),
    ]
    load_after = os.getloadavg()
    print(f"no-op env, {args.envs} envs x {args.steps} steps, median of {args.repeats} runs (CPU time; wall beside "
          f"it); load average {load_before[0]:.2f} before, {load_after[0]:.2f} after (1-min), "
          f"{load_after[1]:.2f} (5-min), {os.cpu_count()} CPUs")
    print(f"bare calls per env-step: envgym step {cpu('bare_env') * 1e6:.2f} µs, act + step "
          f"{cpu('bare_env_agent') * 1e6:.2f} µs; gymnasium no-op step {cpu('bare_gym') * 1e6:.2f} µs")
    print(f"{'mode':<44} {'µs/env-step':>11} {'wall µs':>8} {'overhead µs':>11} {'vs Sync':>8} {'target':>13}")
    for label, key, bare, sync, target in rows:
        index = 1 if key == "async" else 0
        per_step = wall(key) if index else cpu(key)
        over = overhead(key, bare, index)
        versus = per_step / (wall(sync) if index else cpu(sync))
        verdict = "" if target is None else f"<={target} " + ("ok" if over <= target * 1e-6 else "MISSED")
        print(f"{label:<44} {per_step * 1e6:>11.2f} {wall(key) * 1e6:>8.2f} {over * 1e6:>11.2f} {versus:>8.2f} "
              f"{verdict:>13}")


if __name__ == "__main__":
    main()
