"""GUI family latency and density: reset, step, screenshot, concurrent desktops, memory, oracle throughput.

- reset: ``env.reset`` of a task from the warm pool (a fresh desktop container already up: the task's files
  written, its application launched on them and its window awaited, the first screenshot taken); p50/p95
  over ``--resets``, one row per application.
- step: one action (a key press the app answers) plus the next observation (screenshot, window list; the
  accessibility tree in a row of its own); screenshot alone (the root daemon's grab + PNG encode + transfer).
- density: N envs at once (1, 8, 16 by default), each stepping as fast as it can for ``--seconds``: steps/s
  in total, and memory per desktop (the container's cgroup ``memory.current``, i.e. everything its
  processes hold, page cache of its tmpfs included) with its application open.
- oracle: the reference solutions of every task of the suites, through ``envgym eval``'s engine at
  ``--concurrency``: episodes per minute and the success rate.

Targets (issue 14): reset p50 <= 1.5 s, step p50 <= 150 ms, screenshot <= 30 ms, 16 concurrent desktops on
2 cores / 24 GiB at <= 300 MiB each (OSWorld: about 4.6 GiB per extra VM). Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import envgym
from envgym.agents import OracleConfig
from envgym.eval import EvalConfig, evaluate
from envgym.task import load_suite
from envgym.types import Action
from envgym_gui import SUITES


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def container_memory_mib(container_id: str) -> float | None:
    """The container's memory cgroup usage (cgroup v2 ``memory.current`` or v1 ``memory.usage_in_bytes``)."""
    import glob

    for pattern in (f"/sys/fs/cgroup/system.slice/docker-{container_id}*.scope/memory.current",
                    f"/sys/fs/cgroup/docker/{container_id}*/memory.current",
                    f"/sys/fs/cgroup/memory/docker/{container_id}*/memory.usage_in_bytes"):
        for path in glob.glob(pattern):
            try:
                return int(Path(path).read_text()) / (1 << 20)
            except OSError:
                continue
    return None


def one_per_app(tasks) -> dict[str, object]:
    chosen: dict[str, object] = {}
    for task in tasks:
        app = (task.initial_state.get("open") or {}).get("app")
        if app and app not in chosen:
            chosen[app] = task
    return chosen


async def latency(tasks: dict[str, object], resets: int, steps: int) -> list[tuple[str, float, float]]:
    rows = []
    async with envgym.make("gui/desktop-v1", a11y=False) as env:
        gui = env.unwrapped
        for app, task in tasks.items():
            await env.reset(task=task)  # the pool fills; the image's pages are in the cache
            times = []
            for _ in range(resets):
                start = time.perf_counter()
                await env.reset(task=task)
                times.append(time.perf_counter() - start)
            rows.append((f"reset: {app}", pct(times, 0.5), pct(times, 0.95)))
        task = tasks.get("editor") or next(iter(tasks.values()))
        for label, a11y in (("step: key + screenshot + windows", False), ("step: ... + accessibility tree", True)):
            gui.a11y = a11y
            await env.reset(task=task)
            times = []
            for i in range(steps):
                start = time.perf_counter()
                await gui.step(Action.call("key", keys="Right" if i % 2 else "Left"))
                times.append(time.perf_counter() - start)
            rows.append((label, pct(times, 0.5), pct(times, 0.95)))
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            await gui.desktop.screenshot()
            times.append(time.perf_counter() - start)
        rows.append(("screenshot alone (1280x720 PNG)", pct(times, 0.5), pct(times, 0.95)))
    return rows


async def density(task, n: int, seconds: float) -> tuple[int, float, float, float | None]:
    envs = [envgym.make("gui/desktop-v1", a11y=False) for _ in range(n)]
    try:
        await asyncio.gather(*(env.reset(task=task) for env in envs))
        memory = [container_memory_mib(env.unwrapped._sandbox.id) for env in envs]
        counts = [0] * n
        stop = time.perf_counter() + seconds

        async def drive(i: int) -> None:
            while time.perf_counter() < stop:
                await envs[i].unwrapped.step(Action.call("key", keys="Right" if counts[i] % 2 else "Left"))
                counts[i] += 1

        start = time.perf_counter()
        await asyncio.gather(*(drive(i) for i in range(n)))
        elapsed = time.perf_counter() - start
        known = [m for m in memory if m is not None]
        return (n, sum(counts) / elapsed, statistics.median(known) if known else float("nan"),
                max(known) if known else None)
    finally:
        await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)


def oracle_run(suites: tuple[str, ...], concurrency: int) -> tuple[int, int, float]:
    config = EvalConfig(suites=suites, split=None, agent=OracleConfig())
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = asyncio.run(evaluate(config, out, concurrency=concurrency))
        elapsed = time.perf_counter() - start
    return summary.ran, summary.outcomes.get("success", 0), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--density", type=int, nargs="*", default=[1, 8, 16])
    parser.add_argument("--suites", nargs="*", default=list(SUITES))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-oracle", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    tasks = [t for suite in args.suites for t in load_suite(suite)]
    per_app = one_per_app(tasks)
    print(f"# GUI latency ({os.cpu_count()} cores; load {load()})\n")
    print("| measure | p50 (ms) | p95 (ms) | target |")
    print("|---|---:|---:|---|")
    for label, p50, p95 in [] if args.skip_latency else asyncio.run(latency(per_app, args.resets, args.steps)):
        target = "<= 1500" if label.startswith("reset") else "<= 30" if "alone" in label else "<= 150"
        print(f"| {label} | {p50 * 1000:.0f} | {p95 * 1000:.0f} | {target} |")
    task = per_app.get("calc") or next(iter(per_app.values()))
    print(f"\n# Density: concurrent desktops, {task.initial_state['open']['app']} open (load {load()})\n")
    print("| desktops | steps/s (all) | vs 1 | memory per desktop, median (MiB) | max (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    base = None
    for n in args.density:
        count, rate, median, peak = asyncio.run(density(task, n, args.seconds))
        base = base or rate
        print(f"| {count} | {rate:.1f} | {rate / base:.2f}x | {median:.0f} | "
              f"{'n/a' if peak is None else f'{peak:.0f}'} |")
    if not args.skip_oracle:
        n, passed, elapsed = oracle_run(tuple(args.suites), args.concurrency)
        print(f"\n# Oracle over {', '.join(args.suites)} at concurrency {args.concurrency} (load {load()})\n")
        print("| episodes | passed | seconds | episodes/minute |")
        print("|---:|---:|---:|---:|")
        print(f"| {n} | {passed} | {elapsed:.0f} | {n / elapsed * 60:.1f} |")


if __name__ == "__main__":
    main()
