"""Simulated-clock throughput: events processed per second with 1,000 events pending.

The hold model: 1,000 events are pending; each firing schedules a replacement at ``now + U(0, 100)`` s, so
the queue stays at 1,000 while the clock moves. Variants add what timed worlds use: a world action per
event, dependencies (each replacement waits on the event just fired), and 100 condition events
re-evaluated after every firing. A last row runs whole timed episodes (the oracle on all 48 tasks) and
reports events fired and steps per second of the env.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from envgym.agents.baseline import OracleAgent
from envgym.check import env_tasks
from envgym.timed.scheduler import Scheduler
from envgym_timed.env import TimedEnv

PENDING = 1_000


def hold(events: int, *, with_action: bool = False, with_deps: bool = False, conditions: int = 0) -> float:
    rng = random.Random(0)
    s = Scheduler()
    counter = {"n": 0}

    def refill(event) -> None:
        counter["n"] += 1
        after = (event.id,) if with_deps else ()
        s.schedule(f"e{counter['n'] + PENDING}", delay=rng.uniform(0, 100), after=after,
                   action=refill if not with_action else refill_and_touch)

    state = {"x": 0}

    def refill_and_touch(event) -> None:
        state["x"] += 1
        refill(event)

    for i in range(PENDING):
        s.schedule(f"e{i}", delay=rng.uniform(0, 100), action=refill if not with_action else refill_and_touch)
    for i in range(conditions):
        s.schedule(f"c{i}", when=lambda i=i: state["x"] < 0 or i < 0)   # never true: evaluated every firing
    start = time.perf_counter()
    for _ in range(events):
        s.step()
    elapsed = time.perf_counter() - start
    if s.pending != PENDING + conditions:
        raise SystemExit(f"the queue drifted: {s.pending} pending")
    return events / elapsed


async def episodes() -> tuple[int, int, int, float]:
    tasks = [t for fam in ("assistant", "backoffice", "kitchen") for t in env_tasks(f"timed/{fam}-v1")]
    fired = steps = 0
    start = time.perf_counter()
    for task in tasks:
        env = TimedEnv(task.env_id.split("/")[1].rsplit("-v", 1)[0])
        await env.reset(task=task, seed=0)
        agent = OracleAgent(task)
        while True:
            _, _, done, truncated, _ = await env.step(await agent.act(None))  # type: ignore[arg-type]
            if done or truncated:
                break
        timeline = env.timeline()
        fired += len(env.world.scheduler.fired) if env.world else 0
        steps += len(timeline.steps)
    return len(tasks), fired, steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events fired per measurement")
    args = parser.parse_args()
    rows = [
        ("timed events", hold(args.events)),
        ("+ world action per event", hold(args.events, with_action=True)),
        ("+ dependency per event", hold(args.events, with_deps=True)),
        ("+ 100 pending conditions", hold(args.events // 10, conditions=100)),
    ]
    print(f"Scheduler hold model, {PENDING:,} events pending, {args.events:,} fired per row")
    print(f"{'workload':<28} {'events/s':>12}")
    for name, rate in rows:
        print(f"{name:<28} {rate:>12,.0f}")
    count, fired, steps, seconds = asyncio.run(episodes())
    print()
    print(f"{'oracle episodes':>15} {'events fired':>13} {'env steps':>10} {'seconds':>8} {'steps/s':>9} "
          f"{'episodes/s':>11}")
    print(f"{count:>15} {fired:>13} {steps:>10} {seconds:>8.3f} {steps / seconds:>9,.0f} {count / seconds:>11,.1f}")


if __name__ == "__main__":
    main()
