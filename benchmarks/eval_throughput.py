"""Oracle evaluation throughput of the tool suites at concurrency 1 and 32 (target >= 100 episodes/s).

Runs `envgym.eval.evaluate` — the same code path as `envgym eval`: task loading, one env per worker,
a fresh SQLite file per episode, the oracle's steps, grading against the replayed reference state, and
fsync'd record and trajectory writes — into a fresh temporary run directory per measurement, and prints
episodes per second side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from envgym.agents import OracleConfig
from envgym.eval import EvalConfig, evaluate


async def measure(concurrency: int, runs: int) -> tuple[int, float]:
    config = EvalConfig(suites=("tool-retail", "tool-assistant"), split=None, agent=OracleConfig(), runs=runs)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = await evaluate(config, out, concurrency=concurrency)
        elapsed = time.perf_counter() - start
    if summary.outcomes.get("success", 0) != summary.ran:
        raise SystemExit(f"oracle did not pass every episode: {dict(summary.outcomes)}")
    return summary.ran, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="episodes per task (K)")
    args = parser.parse_args()
    asyncio.run(measure(4, 1))  # warm caches (imports, schemas, replayed reference states) like a long run would
    rows = [(c, *asyncio.run(measure(c, args.runs))) for c in (1, 32)]
    base = rows[0][1] / rows[0][2]
    print(f"{'concurrency':>11} {'episodes':>9} {'seconds':>8} {'episodes/s':>11} {'vs c=1':>7} {'target':>12}")
    for concurrency, episodes, seconds in rows:
        rate = episodes / seconds
        print(f"{concurrency:>11} {episodes:>9} {seconds:>8.2f} {rate:>11.1f} {rate / base:>7.2f} "
              f"{'>=100 ' + ('ok' if rate >= 100 else 'MISSED'):>12}")


if __name__ == "__main__":
    main()
