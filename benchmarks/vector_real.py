"""Real tool suites through the everlasting pool: oracle episodes per second at concurrency 1, 8 and 64.

Runs every task of ``tool-retail`` and ``tool-assistant`` (all splits) ``--runs`` times through
``EpisodePool`` with the oracle agent: real ``ToolEnv``s (a fresh SQLite store per episode, tool calls in
worker threads, grading against the replayed reference state), one env per slot, reused across episodes.
No records are written (``benchmarks/eval_throughput.py`` measures ``envgym eval`` end to end). Each
measurement gets a fresh pool, after one warm-up pass that fills the per-process caches a long run keeps
warm. Every episode must succeed, or the benchmark stops.

    python benchmarks/vector_real.py [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections import Counter

import envgym
from envgym.agents.baseline import OracleFactory
from envgym.task import TaskSpec
from envgym.vector import EpisodePool

SUITES = ("tool-retail", "tool-assistant")
CONCURRENCY = (1, 8, 64)


async def measure(tasks: list[TaskSpec], concurrency: int) -> tuple[int, float]:
    outcomes: Counter[str] = Counter()
    start = time.perf_counter()
    async with EpisodePool(OracleFactory(), concurrency=concurrency) as pool:
        async for trajectory in pool.run(tasks):
            outcomes[trajectory.outcome.value] += 1
    seconds = time.perf_counter() - start
    if outcomes["success"] != len(tasks):
        raise SystemExit(f"the oracle did not pass every episode: {dict(outcomes)}")
    return len(tasks), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="passes over each suite per measurement")
    args = parser.parse_args()
    suites = {name: envgym.load_suite(name) for name in SUITES}
    rows = []
    for name, suite in suites.items():
        asyncio.run(measure(suite, 8))  # warm-up
        for concurrency in CONCURRENCY:
            episodes, seconds = asyncio.run(measure(suite * args.runs, concurrency))
            rows.append((name, concurrency, episodes, seconds))
    load = os.getloadavg()[0]
    print(f"oracle agent, {args.runs} passes over each suite; episodes/s through EpisodePool; "
          f"{os.cpu_count()} CPUs, load average {load:.1f} at the end")
    print(f"{'suite':<16} {'concurrency':>11} {'episodes':>9} {'seconds':>8} {'episodes/s':>11} {'vs c=1':>7}")
    for name, concurrency, episodes, seconds in rows:
        base = next(e / s for n, c, e, s in rows if n == name and c == 1)
        rate = episodes / seconds
        print(f"{name:<16} {concurrency:>11} {episodes:>9} {seconds:>8.2f} {rate:>11.1f} {rate / base:>7.2f}")


if __name__ == "__main__":
    main()
