"""Per-step overhead of the vector layer on a no-op environment, side by side with Gymnasium's vector envs.

Every row steps a no-op env (and, for the pool and the channel, a no-op agent) ``--steps`` times per env
with ``--envs`` envs, and reports microseconds per env-step. "overhead" subtracts the cost of the bare
calls the layer wraps, measured in the same run: ``await env.step()`` on the same wrapped envgym env (plus
``await agent.act()`` for pool and channel), or ``env.step()`` on the Gymnasium env. Target: envgym's
overhead <= 20 µs per env-step. "vs Sync" is the per-env-step time relative to Gymnasium's SyncVectorEnv.
The pool rows run ``run_episode`` as the pool does; the task's deadlines (``asyncio.timeout`` per
agent call and per env step) are part of the measured cost, so a row without deadlines shows it apart.

    python benchmarks/vector_overhead.py [--envs 16] [--steps 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time
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


class GymNoop(gymnasium.Env):
    observation_space = gymnasium.spaces.Discrete(2)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


def tasks(n: int, steps: int, deadlines: bool) -> list[TaskSpec]:
    limits = Limits(max_steps=steps + 1) if deadlines else Limits(max_steps=steps + 1, episode_timeout_s=None,
                                                                   step_timeout_s=None)
    return [TaskSpec(id=f"noop-{i}", env_id="bench/noop-v1", instruction="", metadata={"steps": steps},
                     limits=limits, verifiers=(AnswerSpec(kind="exact", expected=""),)) for i in range(n)]


async def bare_envgym(n: int, steps: int, with_agent: bool) -> float:
    envs = [noop_env() for _ in range(n)]
    for env in envs:
        await env.reset(task=tasks(1, 10**9, True)[0])
    agent = NoopAgent()
    start = time.perf_counter()
    for _ in range(steps):
        for env in envs:
            if with_agent:
                await agent.act(OBS)
            await env.step(ACTION)
    return (time.perf_counter() - start) / (n * steps)


async def lockstep(n: int, steps: int) -> float:
    async with AsyncVectorEnv([noop_env] * n) as envs:
        await envs.reset(options={"task": tasks(1, 10**9, True)[0]})
        actions = [ACTION] * n
        start = time.perf_counter()
        for _ in range(steps):
            await envs.step(actions)
        return (time.perf_counter() - start) / (n * steps)


async def pool(n: int, steps: int, deadlines: bool) -> float:
    async with EpisodePool(NoopFactory(), concurrency=n, make_env=lambda _: noop_env()) as p:
        start = time.perf_counter()
        async for _ in p.run(tasks(n, steps, deadlines)):
            pass
        return (time.perf_counter() - start) / (n * steps)


async def channel(n: int, steps: int) -> float:
    start = time.perf_counter()
    async with Channel(tasks(n, steps, True), concurrency=n, make_env=lambda _: noop_env()) as ch:
        while not (batch := await ch.recv(min_batch=n)).done:
            ch.send(dict.fromkeys((r.episode_id for r in batch.ready), ACTION))
    return (time.perf_counter() - start) / (n * steps)


def gymnasium_rows(n: int, steps: int) -> dict[str, float]:
    single = GymNoop()
    single.reset()
    start = time.perf_counter()
    for _ in range(steps * n):
        single.step(0)
    out = {"bare": (time.perf_counter() - start) / (n * steps)}
    for name, cls, k in (("sync", gymnasium.vector.SyncVectorEnv, steps),
                         ("async", gymnasium.vector.AsyncVectorEnv, max(200, steps // 10))):
        envs: Any = cls([GymNoop] * n)
        try:
            envs.reset(seed=0)
            actions = np.zeros(n, dtype=np.int64)
            start = time.perf_counter()
            for _ in range(k):
                envs.step(actions)
            out[name] = (time.perf_counter() - start) / (n * k)
        finally:
            envs.close()
    return out


async def envgym_rows(n: int, steps: int) -> dict[str, float]:
    return {"bare_env": await bare_envgym(n, steps, False), "bare_env_agent": await bare_envgym(n, steps, True),
            "lockstep": await lockstep(n, steps), "pool": await pool(n, steps, True),
            "pool_nodl": await pool(n, steps, False), "channel": await channel(n, steps)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000, help="steps per env per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="each row reports its fastest repeat")
    args = parser.parse_args()
    asyncio.run(envgym_rows(args.envs, 50))  # warm up imports and caches
    eg: dict[str, float] = {}
    gy: dict[str, float] = {}
    for _ in range(args.repeats):  # interleaved, so load on a shared machine hits every row alike
        for best, measured in ((eg, asyncio.run(envgym_rows(args.envs, args.steps))),
                               (gy, gymnasium_rows(args.envs, args.steps))):
            for key, value in measured.items():
                best[key] = min(best.get(key, value), value)
    rows = [
        ("gymnasium SyncVectorEnv", gy["sync"], gy["bare"], None),
        ("gymnasium AsyncVectorEnv (processes)", gy["async"], gy["bare"], None),
        ("envgym AsyncVectorEnv lockstep", eg["lockstep"], eg["bare_env"], 20e-6),
        ("envgym EpisodePool (task deadlines)", eg["pool"], eg["bare_env_agent"], 20e-6),
        ("envgym EpisodePool (no deadlines)", eg["pool_nodl"], eg["bare_env_agent"], 20e-6),
        ("envgym Channel send/recv", eg["channel"], eg["bare_env_agent"], 20e-6),
    ]
    print(f"no-op env, {args.envs} envs x {args.steps} steps, best of {args.repeats}; bare envgym step "
          f"{eg['bare_env'] * 1e6:.2f} µs, bare step+act {eg['bare_env_agent'] * 1e6:.2f} µs, "
          f"bare gymnasium step {gy['bare'] * 1e6:.2f} µs")
    print(f"{'mode':<38} {'µs/env-step':>12} {'overhead µs':>12} {'vs Sync':>8} {'target':>12}")
    for name, per_step, bare, target in rows:
        overhead = per_step - bare
        verdict = "" if target is None else ("<=20 " + ("ok" if overhead <= target else "MISSED"))
        print(f"{name:<38} {per_step * 1e6:>12.2f} {overhead * 1e6:>12.2f} {per_step / gy['sync']:>8.2f} "
              f"{verdict:>12}")


if __name__ == "__main__":
    main()
