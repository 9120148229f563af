"""Long-tailed episodes: the everlasting pool (and optionally lockstep) against the ideal bound, whole run.

The workload is ``--slots`` (64) concurrent episodes at a time, ``--episodes-per-slot`` episodes per slot
in all, each of a length drawn uniformly from 5-40 steps. Every step costs an agent latency and then an
environment latency, both lognormal with sigma 1 (p99 = 10.2x the median; medians ``--agent-ms`` and
``--env-ms``), simulated with ``asyncio.sleep``. All latencies are drawn up front from one seed, so every
mode and every run replays exactly the same episodes.

The bound: no schedule on ``slots`` slots finishes before ``T_ideal = max(total episode time / slots,
longest single episode)`` (episode time = the sum of its agent and env latencies; overhead-free). A mode's
**whole-run fraction** is ``T_ideal / its wall time``, start to last trajectory, drain included: that is
the figure the target (>= 90%) applies to. Beside it, two overhead-free list schedules (each episode, in
order, on the first slot to free up): in the given order, and longest first by step count; the pool's gap
to them is its own overhead, their gap to the bound is the drain.

- pool, given order: ``EpisodePool(concurrency=slots)`` fed the tasks in the drawn order.
- pool, longest first: the same jobs with ``Job.cost_hint`` = the task's step count (known from the task;
  the latencies are not), started longest-processing-time-first (``envgym.vector.pool.longest_first``).
  Long episodes start while short ones fill the other slots, so the drain at the end is short.
- lockstep (``--lockstep``, slow): ``AsyncVectorEnv`` with autoreset; each batched step waits for the
  slowest policy call and then the slowest env step of the batch (a Gymnasium-style synchronous loop).

Also shown per mode: the steady-state fraction, the episode time done from the start until the supply
ran dry (a slot asked for a task and none was left) over slots x that time. Every figure is the median of
``--repeats`` (>= 3) runs; the load average is printed with each run and with the table.

    python benchmarks/vector_longtail.py [--slots 64] [--episodes-per-slot 12] [--agent-ms 20] [--env-ms 10]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import os
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from envgym.agent import Agent
from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Limits, Observation, Verdict
from envgym.vector import AsyncVectorEnv, EpisodePool, Job
from envgym.vector.pool import longest_first
from envgym.verify.spec import AnswerSpec

OBS = Observation(text="")
ACTION = Action(text="act")
PASS = Verdict(score=1.0, passed=True)


@dataclass
class Workload:
    agent_s: list[np.ndarray]  # per episode, per step
    env_s: list[np.ndarray]
    done: list[tuple[float, float]] = field(default_factory=list)  # per step: (end time, its agent + env latency)
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

    @property
    def durations(self) -> list[float]:
        return [float(a.sum() + e.sum()) for a, e in zip(self.agent_s, self.env_s, strict=True)]

    def ran_dry(self) -> None:
        if self.dry_at is None:
            self.dry_at = time.perf_counter()

    def steady(self, start: float, slots: int) -> float:
        """Episode time done before the supply ran dry, over slots x the time until then."""
        assert self.dry_at is not None
        return sum(work for end, work in self.done if end <= self.dry_at) / (slots * (self.dry_at - start))

    def ideal_s(self, slots: int) -> float:
        durations = self.durations
        return max(sum(durations) / slots, max(durations))


def list_schedule(durations: list[float], slots: int) -> float:
    """Makespan of overhead-free list scheduling: each episode, in order, on the first slot to free up."""
    free = [0.0] * slots
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


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
        env_s = self.work.env_s[self.episode]
        await asyncio.sleep(env_s[self.t])
        self.work.done.append((time.perf_counter(), env_s[self.t] + self.work.agent_s[self.episode][self.t]))
        self.t += 1
        if self.t == len(env_s):
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


async def run_pool(work: Workload, slots: int, hinted: bool) -> tuple[int, float, float]:
    limits = Limits(max_steps=1000, step_timeout_s=None, episode_timeout_s=None)
    jobs = [Job(TaskSpec(id=f"e{i}", env_id="bench/latency-v1", instruction="", metadata={"episode": i},
                         limits=limits, verifiers=(AnswerSpec(kind="exact", expected=""),)),
                cost_hint=len(env_s) if hinted else None) for i, env_s in enumerate(work.env_s)]

    def supply():  # an iterator, to see when it runs dry; a plain list would be ordered by the pool itself
        yield from longest_first(jobs)
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
    parser.add_argument("--repeats", type=int, default=3, help="runs per mode; medians are reported (>= 3)")
    parser.add_argument("--lockstep", action="store_true", help="also run lockstep (minutes per run)")
    args = parser.parse_args()
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (medians)")
    draw = (args.slots * args.episodes_per_slot, args.agent_ms, args.env_ms, args.seed)
    work = Workload.draw(*draw)
    ideal = work.ideal_s(args.slots)
    lengths = [len(e) for e in work.env_s]
    by_steps = [work.durations[i] for i in sorted(range(len(lengths)), key=lambda i: -lengths[i])]
    bounds = {"given order": list_schedule(work.durations, args.slots),
              "longest first (step count)": list_schedule(by_steps, args.slots)}
    modes = {"pool, given order": lambda w: run_pool(w, args.slots, False),
             "pool, longest first": lambda w: run_pool(w, args.slots, True)}
    if args.lockstep:
        modes["lockstep"] = lambda w: run_lockstep(w, args.slots)
    print(f"{len(work.env_s)} episodes, {work.steps} steps, {args.slots} slots; latency medians agent "
          f"{args.agent_ms:g} ms, env {args.env_ms:g} ms; episode time mean {np.mean(work.durations):.2f} s, "
          f"longest {max(work.durations):.2f} s; ideal bound {ideal:.2f} s "
          f"(total / slots {sum(work.durations) / args.slots:.2f} s)")
    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for repeat in range(args.repeats):  # modes interleaved, so load on a shared machine hits each alike
        for mode, runner in modes.items():
            run_work = Workload.draw(*draw)
            steps, seconds, start = asyncio.run(runner(run_work))
            if steps != run_work.steps:
                raise SystemExit(f"{mode} ran {steps} steps, the workload has {run_work.steps}")
            results[mode].append((seconds, run_work.steady(start, args.slots)))
            print(f"  run {repeat + 1} {mode:<22} {seconds:6.2f} s  {ideal / seconds:6.1%} of ideal  "
                  f"(load average {os.getloadavg()[0]:.2f})")
    load = os.getloadavg()
    print(f"median of {args.repeats} runs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'mode':<38} {'seconds':>8} {'steps/s':>8} {'whole run / ideal':>18} {'steady state':>13}")
    for mode, runs in results.items():
        seconds = statistics.median(s for s, _ in runs)
        steady = statistics.median(f for _, f in runs)
        verdict = "ok" if ideal / seconds >= 0.9 else "MISSED"
        print(f"{mode:<38} {seconds:>8.2f} {work.steps / seconds:>8.1f} {ideal / seconds:>11.1%} {verdict:>6} "
              f"{steady:>13.1%}")
    for name, makespan in bounds.items():
        print(f"{'no overhead, ' + name:<38} {makespan:>8.2f} {work.steps / makespan:>8.1f} {ideal / makespan:>11.1%}")
    print(f"{'ideal bound':<38} {ideal:>8.2f} {work.steps / ideal:>8.1f} {1:>11.1%}")
    if args.lockstep:
        pool_s = statistics.median(s for s, _ in results["pool, longest first"])
        lock_s = statistics.median(s for s, _ in results["lockstep"])
        print(f"pool (longest first) / lockstep throughput: {lock_s / pool_s:.2f}x (target >= 3x)")


if __name__ == "__main__":
    main()
