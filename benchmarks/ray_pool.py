"""The Ray backend against the local pool, on a local cluster of simulated hosts: one run, one table.

Hosts are nodes of a :func:`~envgym.vector.ray.local_cluster` on this machine (a head with no CPUs, 3 nodes,
every address on loopback), so hosts and driver share this machine's cores: the figures are upper bounds
of the overhead a real cluster (one machine per host) would show. Three measurements:

1. **Dispatch overhead per episode**: ``--quick`` one-step episodes that take no time (a scripted agent, an
   env that ends at once), through ``EpisodePool(concurrency=S)`` and through ``RayEpisodePool`` with the
   same S slots on one host, alternately, ``--repeats`` times; overhead = median over runs of (Ray wall -
   local wall) / episodes. Target <= 2 ms. Also the driver process's own CPU time per episode (with Ray,
   the episodes themselves run in the host's process).
2. **Long tail**: 3 hosts x ``--slots`` (64) slots, ``--episodes-per-slot`` episodes per slot, each of
   3-12 steps whose agent and env latencies are lognormal (sigma 1, medians ``--agent-ms`` / ``--env-ms``;
   simulated with ``asyncio.sleep``; drawn up front from one seed, so every run replays the same episodes).
   The bound is ``T_ideal = max(total episode time / slots, longest episode)``: no schedule finishes
   sooner. The **whole-run fraction** ``T_ideal / wall`` (start to last trajectory, the drain included) is
   what the target (>= 90%) applies to. Runs are made in the job orders of ``--orders`` (default all
   three): as given; longest first by ``Job.cost_hint`` = the step count; longest first by ``cost_hint`` =
   the episode's scripted time (its task carries its latencies, so here its length is known in full: the
   case the hint is for). Each beside
   one local pool with the same total slots on the same jobs, and beside overhead-free list scheduling in
   that order (its gap to the bound is the drain, the pool's gap to it is overhead). Medians of
   ``--repeats`` runs. Also the steady state: the episode time done until the supply ran dry over slots x
   that time.
3. **Node loss**: the long-tail run again (in the last of ``--orders``), one host's node killed once
   40% of the episodes have finished: episodes re-dispatched, time from the kill until the pool noticed
   (and re-sent them), wall time against the median run without loss, records lost or duplicated (target 0).

The load average is printed with every figure.

    python benchmarks/ray_pool.py [--slots 64] [--episodes-per-slot 4] [--agent-ms 100] [--env-ms 50] [--repeats 3]
        [--orders given steps time]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import os
import statistics
import time
from collections import Counter
from typing import Any

import numpy as np

from envgym.agent import Agent
from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Limits, Observation, Verdict
from envgym.vector import EpisodePool, Job
from envgym.vector.pool import longest_first
from envgym.vector.ray import RayEpisodePool, local_cluster
from envgym.verify.spec import AnswerSpec

HOSTS = 3


class SleepEnv(Env):
    """Step ``i`` sleeps ``metadata["env"][i]`` seconds; the episode ends after the last one, passing."""

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        self.i = 0
        return Observation(text="go"), {"tools": []}

    async def step(self, action: Action) -> StepResult:
        latencies = self.task.metadata["env"]
        if latencies[self.i]:
            await asyncio.sleep(latencies[self.i])
        self.i += 1
        done = self.i >= len(latencies)
        return StepResult(Observation(text="ok"), 1.0 if done else 0.0, done, False, {})

    async def verify(self) -> Verdict:
        return Verdict(score=1.0, passed=True)


class SleepAgent(Agent):
    def __init__(self, latencies: list[float]) -> None:
        super().__init__()
        self.latencies, self.i = latencies, 0

    async def act(self, observation: Observation) -> Action:
        if self.latencies[self.i]:
            await asyncio.sleep(self.latencies[self.i])
        self.i += 1
        return Action(text="act")


class SleepAgents:
    """The agent factory (built on each host): each task's agent latencies come with the task."""

    def create(self, task: TaskSpec) -> Agent:
        return SleepAgent(task.metadata["agent"])

    def describe(self) -> dict[str, Any]:
        return {"agent": "sleep"}

    async def aclose(self) -> None:
        pass


def make_sleep_env(env_id: str) -> Env:
    return SleepEnv()


def workload(n: int, *, agent_ms: float, env_ms: float, seed: int = 0, steps: tuple[int, int] = (3, 12)
             ) -> list[TaskSpec]:
    rng = np.random.default_rng(seed)
    tasks = []
    for i in range(n):
        k = int(rng.integers(steps[0], steps[1] + 1))
        agent = (agent_ms / 1000 * rng.lognormal(0, 1, k)).round(4).tolist() if agent_ms else [0.0] * k
        env = (env_ms / 1000 * rng.lognormal(0, 1, k)).round(4).tolist() if env_ms else [0.0] * k
        tasks.append(TaskSpec(id=f"w{i:05d}", env_id="bench/sleep-v1", instruction="go",
                              metadata={"agent": agent, "env": env},
                              verifiers=(AnswerSpec(kind="exact", expected="x"),),
                              limits=Limits(max_steps=100, step_timeout_s=600, episode_timeout_s=3600)))
    return tasks


def episode_seconds(task: TaskSpec) -> float:
    return sum(task.metadata["agent"]) + sum(task.metadata["env"])


def list_schedule(durations: list[float], slots: int) -> float:
    """Makespan of zero-overhead online list scheduling: each episode, in supply order, on the first free slot."""
    free = [0.0] * slots
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def steady_fraction(finished: list[Any], slots: int, began: float, dry: float) -> float:
    """Intrinsic episode-seconds done between the start and the moment the supply ran dry, over ``slots`` x
    that window: 100% is the ideal (every slot always busy with no overhead); no drain is counted."""
    work = 0.0
    for done in finished:
        timing, intrinsic = done.trajectory.timing, episode_seconds(done.job.task)
        overlap = min(timing.started_at + timing.wall_s, dry) - max(timing.started_at, began)
        if overlap > 0 and timing.wall_s > 0:
            work += intrinsic * overlap / timing.wall_s
    return work / (slots * (dry - began))


class Supply:
    """The jobs, noting (wall clock) when the last one was taken: from then on the run only drains."""

    def __init__(self, tasks: list[TaskSpec], hint: Any = None) -> None:
        jobs = [Job(task, key=i, cost_hint=None if hint is None else hint(task)) for i, task in enumerate(tasks)]
        self.jobs = iter(longest_first(jobs))
        self.dry = 0.0

    def __iter__(self) -> Supply:
        return self

    def __next__(self) -> Job:
        try:
            return next(self.jobs)
        except StopIteration:
            self.dry = self.dry or time.time()
            raise


def steps_of(task: TaskSpec) -> float:
    return len(task.metadata["env"])


ORDERS = {"given": ("given order", None), "steps": ("longest first (steps)", steps_of),
          "time": ("longest first (scripted time)", episode_seconds)}
"""Job orders of the long-tail runs (``--orders``): a label, and the cost hint each gives its jobs (None: no
hint, the given order)."""


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def timed(pool: Any, tasks: list[TaskSpec], *, on_done: Any = None, slots: int = 0, hint: Any = None
                ) -> tuple[float, list[Any]] | tuple[float, list[Any], float]:
    began, wall_began = time.perf_counter(), time.time()
    finished = []
    supply = Supply(tasks, hint)
    async for done in pool.run_jobs(supply):
        finished.append(done)
        if on_done is not None:
            await on_done(len(finished))
    if slots:
        return time.perf_counter() - began, finished, steady_fraction(finished, slots, wall_began, supply.dry)
    return time.perf_counter() - began, finished


async def main(args: argparse.Namespace, cluster: Any) -> None:
    rows: list[tuple[str, str, str]] = []
    slots, repeats = args.slots, args.repeats
    # 1. dispatch overhead: one host's worth of slots, instant one-step episodes, local and Ray alternately
    quick = workload(args.quick, agent_ms=0, env_ms=0, steps=(1, 1))
    local_pool = EpisodePool(SleepAgents(), concurrency=slots, make_env=make_sleep_env)
    one_host = RayEpisodePool(SleepAgents(), make_env=make_sleep_env)
    await one_host.start()
    first = one_host.live_hosts[0]
    for host in one_host.live_hosts[1:]:  # dispatch to one host only: the same slots as the local pool
        host.alive = False
    await timed(local_pool, quick[:200])  # warm up
    await timed(one_host, quick[:200])
    runs: list[tuple[float, float, float, float]] = []
    for _ in range(repeats):
        cpu = time.process_time()
        local_s, done = await timed(local_pool, quick)
        local_cpu = time.process_time() - cpu
        assert len(done) == len(quick)
        cpu = time.process_time()
        ray_s, done = await timed(one_host, quick)
        ray_cpu = time.process_time() - cpu
        assert len(done) == len(quick) and {d.trajectory.host for d in done} == {first.label}
        runs.append((local_s, ray_s, local_cpu, ray_cpu))
    for host in one_host.hosts.values():
        host.alive = True
    await one_host.aclose()
    await local_pool.aclose()
    n = len(quick)
    local_ms = statistics.median(r[0] for r in runs) / n * 1000
    ray_ms = statistics.median(r[1] for r in runs) / n * 1000
    overhead_ms = statistics.median(r[1] - r[0] for r in runs) / n * 1000
    rows += [("dispatch: local pool, per episode", f"{local_ms:.2f} ms",
              f"{n} instant episodes, {slots} slots, median of {repeats}"),
             ("dispatch: Ray pool (1 host), per episode", f"{ray_ms:.2f} ms", ""),
             ("dispatch overhead per episode (target <= 2 ms)", f"{overhead_ms:.2f} ms",
              ("PASS" if overhead_ms <= 2 else "MISS") + f"; {load()}"),
             ("dispatch: driver CPU per episode, local / Ray",
              f"{statistics.median(r[2] for r in runs) / n * 1000:.2f} / "
              f"{statistics.median(r[3] for r in runs) / n * 1000:.2f} ms",
              "Ray: the episodes run in the host's process")]

    # 2. long tail over 3 hosts x slots, in each job order, Ray and one local pool alternately
    total = HOSTS * slots
    tasks = workload(total * args.episodes_per_slot, agent_ms=args.agent_ms, env_ms=args.env_ms)
    durations = [episode_seconds(t) for t in tasks]
    ideal = max(sum(durations) / total, max(durations))
    rows.append((f"long tail: {len(tasks)} episodes, {HOSTS} hosts x {slots} slots, ideal bound", f"{ideal:.2f} s",
                 f"total / slots {sum(durations) / total:.2f} s; mean episode {np.mean(durations):.2f} s, "
                 f"p99 {np.percentile(durations, 99):.2f} s, longest {max(durations):.2f} s"))
    orders = dict(ORDERS[name] for name in args.orders)
    measured: dict[tuple[str, str], list[tuple[float, float]]] = {}
    per_host: Counter[str] = Counter()
    async with RayEpisodePool(SleepAgents(), make_env=make_sleep_env) as pool, \
            EpisodePool(SleepAgents(), concurrency=total, make_env=make_sleep_env) as local:
        for repeat in range(repeats):
            for order, hint in orders.items():
                for backend, which in (("Ray", pool), ("local", local)):
                    wall, done, steady = await timed(which, tasks, slots=total, hint=hint)
                    assert sorted(d.job.key for d in done) == list(range(len(tasks)))  # exactly once each
                    if backend == "Ray":
                        per_host.update(d.trajectory.host for d in done)
                    measured.setdefault((order, backend), []).append((wall, steady))
                    print(f"  run {repeat + 1} {backend:<5} {order:<30} {wall:6.2f} s {ideal / wall:6.1%} of ideal "
                          f"({load()})", flush=True)
    for order, hint in orders.items():
        ordered = longest_first([Job(t, cost_hint=None if hint is None else hint(t)) for t in tasks])
        online = list_schedule([episode_seconds(job.task) for job in ordered], total)
        ray_wall = statistics.median(w for w, _ in measured[order, "Ray"])
        local_wall = statistics.median(w for w, _ in measured[order, "local"])
        ray_steady = statistics.median(s for _, s in measured[order, "Ray"])
        local_steady = statistics.median(s for _, s in measured[order, "local"])
        rows += [(f"long tail, {order}: Ray whole run / ideal (target >= 90%)", f"{ideal / ray_wall:.1%}",
                  ("PASS" if ideal / ray_wall >= 0.9 else "MISS") + f"; wall {ray_wall:.2f} s, steady state "
                  f"{ray_steady:.1%}"),
                 (f"long tail, {order}: one local pool of {total} slots", f"{ideal / local_wall:.1%}",
                  f"wall {local_wall:.2f} s, steady state {local_steady:.1%}; Ray throughput / local "
                  f"{local_wall / ray_wall:.2f}x"),
                 (f"long tail, {order}: no overhead (list scheduling)", f"{ideal / online:.1%}",
                  f"{online:.2f} s: the drain this order leaves")]
    rows.append(("long tail: episodes per host (all Ray runs)", str(sorted(per_host.values())), load()))

    # 3. node loss at 40%
    order, hint = ORDERS[args.orders[-1]]
    pool = RayEpisodePool(SleepAgents(), make_env=make_sleep_env)
    await pool.start()
    killed_at: list[float] = []

    async def kill_at_40(count: int) -> None:
        if count == int(0.4 * len(tasks)) and not killed_at:
            victim = pool.live_hosts[0]
            index = next(i for i, node in enumerate(cluster.nodes) if node.node_id == victim.node_id)
            killed_at.append(time.perf_counter())
            await asyncio.to_thread(cluster.remove_host, index)
        if killed_at and len(killed_at) == 1 and pool.lost:
            killed_at.append(time.perf_counter())

    loss_wall, done = await timed(pool, tasks, on_done=kill_at_40, hint=hint)
    redispatched, lost = pool.redispatched, list(pool.lost)
    await pool.aclose()
    keys = Counter(d.job.key for d in done)
    missing = len(tasks) - len(keys)
    duplicates = sum(n - 1 for n in keys.values())
    failed = sum(d.trajectory.outcome.value != "success" for d in done)
    noticed = f"{killed_at[1] - killed_at[0]:.2f} s" if len(killed_at) > 1 else "n/a"
    ray_wall = statistics.median(w for w, _ in measured[order, "Ray"])
    rows += [("node loss: hosts lost / episodes re-dispatched", f"{len(lost)} / {redispatched}",
              f"one node killed after {int(0.4 * len(tasks))} episodes"),
             ("node loss: kill -> noticed and re-sent (seen at the next result)", noticed, ""),
             ("node loss: wall / median wall without loss", f"{loss_wall:.2f} s / {ray_wall:.2f} s",
              f"{loss_wall / ray_wall:.2f}x"),
             ("node loss: records lost / duplicated / not success (target 0)", f"{missing} / {duplicates} / {failed}",
              ("PASS" if missing == duplicates == failed == 0 else "MISS") + f"; {load()}")]

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>14}  notes")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>14}  {note}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=64, help="slots per host")
    parser.add_argument("--episodes-per-slot", type=int, default=4)
    parser.add_argument("--agent-ms", type=float, default=100.0, help="median agent latency per step")
    parser.add_argument("--env-ms", type=float, default=50.0, help="median env latency per step")
    parser.add_argument("--quick", type=int, default=2000, help="instant episodes for the dispatch overhead")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement; medians (>= 3)")
    parser.add_argument("--orders", nargs="+", choices=list(ORDERS), default=list(ORDERS),
                        help="job orders of the long-tail runs; node loss runs in the last one")
    arguments = parser.parse_args()
    if arguments.repeats < 3:
        parser.error("--repeats must be at least 3 (medians)")
    began = time.perf_counter()
    with local_cluster(HOSTS, slots=arguments.slots) as local:
        print(f"cluster of {HOSTS} hosts x {arguments.slots} slots up in {time.perf_counter() - began:.1f} s "
              f"({load()})")
        asyncio.run(main(arguments, local))
