"""Long-tailed episodes: lockstep vs the everlasting pool vs the ideal bound, on one simulated workload.

The workload is ``--slots`` (64) concurrent episodes at a time, ``--episodes-per-slot`` episodes per slot
in all, each of a length drawn uniformly from 5-40 steps. Every step costs an agent latency and then an
environment latency, both lognormal with sigma 1 (p99 = 10.2x the median; medians ``--agent-ms`` and
``--env-ms``), simulated with ``asyncio.sleep``. All latencies are drawn up front from one seed, so every
mode replays exactly the same episodes.

- lockstep: ``AsyncVectorEnv`` (autoreset next-step; a reset draws the next episode). Each batched step
  runs the policy for every active episode concurrently and waits for the slowest, then steps every env
  and waits for the slowest (a synchronous batch, as in Gymnasium loops).
- pool: ``EpisodePool(concurrency=slots)``; each episode's agent and env take exactly their own latencies.
- ideal: zero overhead and perfect packing of the episodes onto the slots:
  ``T_ideal = max(sum over all steps of (agent + env latency) / slots, longest single episode)`` and
  ``ideal steps/s = total steps / T_ideal`` (= slots / mean step latency when the sum term dominates).
  No schedule beats it; it is reached only by one that knows every episode's length in advance.
- ideal online: zero overhead, episodes started in supply order, each on the first slot to free up (list
  scheduling, simulated exactly with a heap of slot finish times): the bound for any scheduler that does
  not know episode lengths, so the gap between pool and this row is envgym's own overhead.

Each mode is reported over the whole run and over its steady state: from the start until the task
supply ran dry (the first time a slot asked for a task and none was left). A finite workload ends with a
drain, slots idling while the last, longest episodes finish, which no scheduler that does not know
episode lengths avoids; an everlasting pool, fed by a trainer, never drains. Env utilisation = time envs
spend inside ``step`` / (slots x wall time); for the ideal, sum of env latencies / (slots x T_ideal).
Targets: pool >= 3x lockstep steps/s and >= 90% of the ideal.

    python benchmarks/vector_longtail.py [--slots 64] [--episodes-per-slot 12] [--agent-ms 20] [--env-ms 10]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from envgym.agent import Agent
from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Limits, Observation, Verdict
from envgym.vector import AsyncVectorEnv, EpisodePool
from envgym.verify.spec import AnswerSpec

OBS = Observation(text="")
ACTION = Action(text="act")
PASS = Verdict(score=1.0, passed=True)


@dataclass
class Workload:
    agent_s: list[np.ndarray]  # per episode, per step
    env_s: list[np.ndarray]
    busy_s: float = 0.0  # measured time inside env.step
    step_ends: list[float] = field(default_factory=list)
    dry_at: float | None = None  # when a slot first found no task left

    @classmethod
    def draw(cls, episodes: int, agent_ms: float, env_ms: float, seed: int) -> Workload:
        rng = np.random.default_rng(seed)
        lengths = rng.integers(5, 41, size=episodes)
        return cls(agent_s=[rng.lognormal(np.log(agent_ms / 1e3), 1.0, n) for n in lengths],
                   env_s=[rng.lognormal(np.log(env_ms / 1e3), 1.0, n) for n in lengths])

    @property
    def steps(self) -> int:
        return sum(len(e) for e in self.env_s)

    def ran_dry(self) -> None:
        if self.dry_at is None:
            self.dry_at = time.perf_counter()

    def steady(self, start: float) -> tuple[int, float]:
        """Steps done before the supply ran dry, and the seconds until then."""
        assert self.dry_at is not None
        return sum(1 for t in self.step_ends if t <= self.dry_at), self.dry_at - start

    def ideal(self, slots: int) -> tuple[float, float]:
        per_episode = [a.sum() + e.sum() for a, e in zip(self.agent_s, self.env_s, strict=True)]
        seconds = max(sum(per_episode) / slots, max(per_episode))
        return self.steps / seconds, sum(e.sum() for e in self.env_s) / (slots * seconds)

    def ideal_online(self, slots: int) -> float:
        free_at = [0.0] * slots  # a heap of the times each slot frees up
        for a, e in zip(self.agent_s, self.env_s, strict=True):
            heapq.heappush(free_at, heapq.heappop(free_at) + a.sum() + e.sum())
        return self.steps / max(free_at)


class LatencyEnv(Env):
    """Plays the workload's episode ``task.metadata['episode']`` (or, for lockstep, the next one)."""

    def __init__(self, work: Workload, queue: list[int] | None = None) -> None:
        super().__init__()
        self.work, self.queue = work, queue
        self.episode: int | None = None

    async def reset(self, *, task=None, seed=None, options=None):
        if task is not None:
            self.episode = task.metadata["episode"]
        else:
            self.episode = self.queue.pop() if self.queue else None  # None: idle, the workload is used up
            if self.episode is None:
                self.work.ran_dry()
        self.t = 0
        return OBS, {}

    async def step(self, action):
        if self.episode is None:
            return StepResult(OBS, 0.0, False, False, {"idle": True})
        start = time.perf_counter()
        latencies = self.work.env_s[self.episode]
        await asyncio.sleep(latencies[self.t])
        end = time.perf_counter()
        self.work.busy_s += end - start
        self.work.step_ends.append(end)
        self.t += 1
        if self.t == len(latencies):
            return StepResult(OBS, 1.0, True, False, {"verdict": PASS})
        return StepResult(OBS, 0.0, False, False, {})

    async def verify(self):
        return PASS


class LatencyAgent(Agent):
    def __init__(self, latencies: np.ndarray) -> None:
        super().__init__()
        self.latencies, self.t = latencies, 0

    async def act(self, observation):
        await asyncio.sleep(self.latencies[self.t])
        self.t += 1
        return ACTION


class LatencyFactory:
    def __init__(self, work: Workload) -> None:
        self.work = work

    def create(self, task):
        return LatencyAgent(self.work.agent_s[task.metadata["episode"]])

    def describe(self):
        return {}

    async def aclose(self):
        pass


async def run_lockstep(work: Workload, slots: int) -> tuple[int, float, float]:
    queue = list(reversed(range(len(work.env_s))))
    envs = AsyncVectorEnv([lambda: LatencyEnv(work, queue)] * slots)
    steps = done = 0
    start = time.perf_counter()
    async with envs:
        await envs.reset()
        ended = np.zeros(slots, dtype=np.bool_)
        while done < len(work.env_s):
            thinking = [work.agent_s[env.episode][env.t] for env, e in zip(envs.envs, ended, strict=True)
                        if env.episode is not None and not e]  # the batch's policy call: waits for the slowest
            await asyncio.gather(*(asyncio.sleep(s) for s in thinking))
            steps += len(thinking)
            _, _, terminations, truncations, _ = await envs.step([ACTION] * slots)
            ended = terminations | truncations
            done += int(ended.sum())
    return steps, time.perf_counter() - start, start


async def run_pool(work: Workload, slots: int) -> tuple[int, float, float]:
    limits = Limits(max_steps=1000, step_timeout_s=None, episode_timeout_s=None)
    tasks = [TaskSpec(id=f"e{i}", env_id="bench/latency-v1", instruction="", metadata={"episode": i}, limits=limits,
                      verifiers=(AnswerSpec(kind="exact", expected=""),)) for i in range(len(work.env_s))]

    def supply():
        yield from tasks
        work.ran_dry()

    steps = 0
    start = time.perf_counter()
    async with EpisodePool(LatencyFactory(work), concurrency=slots, make_env=lambda _: LatencyEnv(work)) as pool:
        async for trajectory in pool.run(supply()):
            steps += len(trajectory.steps)
    return steps, time.perf_counter() - start, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--episodes-per-slot", type=int, default=12)
    parser.add_argument("--agent-ms", type=float, default=20.0, help="median agent latency")
    parser.add_argument("--env-ms", type=float, default=10.0, help="median env latency")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    draw = (args.slots * args.episodes_per_slot, args.agent_ms, args.env_ms, args.seed)
    results = {}
    for mode, runner in (("pool", run_pool), ("lockstep", run_lockstep)):
        work = Workload.draw(*draw)
        steps, seconds, start = asyncio.run(runner(work, args.slots))
        if steps != work.steps:
            raise SystemExit(f"{mode} ran {steps} steps, the workload has {work.steps}")
        steady_steps, steady_seconds = work.steady(start)
        results[mode] = (steps / seconds, work.busy_s / (args.slots * seconds), seconds)
        results[f"{mode}, steady"] = (steady_steps / steady_seconds, None, steady_seconds)
    work = Workload.draw(*draw)
    ideal_rate, ideal_util = work.ideal(args.slots)
    online_rate = work.ideal_online(args.slots)
    sample = np.concatenate(work.env_s)
    print(f"{len(work.env_s)} episodes, {work.steps} steps, {args.slots} slots; latency medians agent "
          f"{args.agent_ms:g} ms, env {args.env_ms:g} ms; env p99/median = "
          f"{np.percentile(sample, 99) / np.median(sample):.1f}")
    print("ideal = total steps / max(sum(agent + env latency) / slots, longest episode)")
    print("ideal online = total steps / makespan of zero-overhead list scheduling in supply order")
    print(f"{'mode':<18} {'seconds':>8} {'steps/s':>9} {'vs lockstep':>12} {'of ideal':>9} {'env util':>9}")
    lock_rate = results["lockstep"][0]
    for mode in ("lockstep", "lockstep, steady", "pool", "pool, steady"):
        rate, util, seconds = results[mode]
        shown = "" if util is None else f"{util:.1%}"
        print(f"{mode:<18} {seconds:>8.2f} {rate:>9.1f} {rate / lock_rate:>11.2f}x {rate / ideal_rate:>8.1%} "
              f"{shown:>9}")
    print(f"{'ideal':<18} {work.steps / ideal_rate:>8.2f} {ideal_rate:>9.1f} {ideal_rate / lock_rate:>11.2f}x "
          f"{1:>8.1%} {ideal_util:>8.1%}")
    print(f"{'ideal online':<18} {work.steps / online_rate:>8.2f} {online_rate:>9.1f} "
          f"{online_rate / lock_rate:>11.2f}x {online_rate / ideal_rate:>8.1%}")
    for label, pool, lock in (("whole run", "pool", "lockstep"), ("steady state", "pool, steady", "lockstep, steady")):
        pool_rate, lock_rate = results[pool][0], results[lock][0]
        print(f"targets ({label}): pool >= 3x lockstep: {'ok' if pool_rate >= 3 * lock_rate else 'MISSED'}; "
              f"pool >= 90% of ideal: {'ok' if pool_rate >= 0.9 * ideal_rate else 'MISSED'}")
    pool_rate = results["pool"][0]
    print(f"pool / ideal online (whole run): {pool_rate / online_rate:.1%} "
          f"({'ok' if pool_rate >= 0.9 * online_rate else 'MISSED'} against 90%)")


if __name__ == "__main__":
    main()
