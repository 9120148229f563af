"""Text games: the reference solutions (gold paths, walkthroughs) replayed through envgym, one env per suite.

    python benchmarks/textgames.py [--suite text-scienceworld] [--suite text-textworld] [--limit N]

Prints per suite: tasks, passed, mean game score, episodes/s and steps/s with the oracle in one env (its
simulator reused across resets; the first episode, which starts the JVM / opens the game cache, is timed
apart). TextWorld games must be generated first (``python -m envgym_textgames.build textworld-games``),
else generation is timed too.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import envgym
from envgym.agents.baseline import OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite


async def bench(suite: str, limit: int | None) -> None:
    tasks = load_suite(suite)[:limit]
    if not tasks:
        raise SystemExit(f"suite {suite!r} has no tasks")
    async with envgym.make(tasks[0].env_id) as env:
        start = time.perf_counter()
        first = await run_episode(env, OracleAgent(tasks[0]), tasks[0], seed=0)
        first_s = time.perf_counter() - start
        results, start = [first], time.perf_counter()
        for task in tasks[1:]:
            results.append(await run_episode(env, OracleAgent(task), task, seed=0))
        rest_s = time.perf_counter() - start
    game = "scienceworld" if "scienceworld" in tasks[0].env_id else "textworld"
    scores = [r.verdict.evidence[game]["score"] / r.verdict.evidence[game]["max_score"] for r in results]
    steps = sum(len(r.steps) for r in results[1:])
    print(f"{suite:20s} tasks {len(tasks):3d}  passed {sum(r.verdict.passed for r in results):3d}  "
          f"mean game score {100 * sum(scores) / len(scores):5.1f}%  first episode {first_s:5.1f} s  "
          + (f"then {(len(tasks) - 1) / rest_s:5.2f} episodes/s, {steps / rest_s:6.1f} steps/s" if rest_s else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", help="default: text-scienceworld and text-textworld")
    parser.add_argument("--limit", type=int, help="first N tasks of each suite")
    args = parser.parse_args()
    for suite in args.suite or ["text-scienceworld", "text-textworld"]:
        asyncio.run(bench(suite, args.limit))


if __name__ == "__main__":
    main()
