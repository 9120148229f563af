"""MiniWoB++ episodes per second at concurrency 1, 2, 4 and 8, with CPU seconds per episode (issue 19: c=8 >= 1.5x c=1).

Every measurement is one ``envgym.eval.evaluate`` of the ``web-miniwob`` suite with the oracle — the code path
of ``envgym eval``: the pool, one env per slot reused across episodes, the page's reset and steps, grading,
fsync'd records — into a fresh run directory. The shared Chromium is held for the whole script (a long run
launches it once), and one untimed warm-up run precedes the table. Concurrencies are interleaved round by
round, so a noisy minute falls on all of them; the table shows medians over ``--repeats`` rounds.

CPU s/episode counts this process and every descendant (the Playwright driver, Chromium's browser, zygote,
renderer and utility processes, the dead ones through their reaper's ``cutime``), read from ``/proc`` before
and after each run. ``host CPU`` is the whole machine's busy time over the same run (``/proc/stat``): it
includes other load, and is there to show that nothing escaped the process-tree count. Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from envgym.agents import OracleConfig
from envgym.eval import EvalConfig, evaluate
from envgym_web.browser import CHROMIUM_ARGS, chromium_path, shared_browser

TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: str) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()  # fields from the state on (the name may hold spaces)


def tree_cpu_s(root: int) -> float:
    """CPU seconds of ``root`` and its descendants, including reaped children (utime+stime+cutime+cstime)."""
    parent: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None:
                parent[int(entry)] = int(fields[1])
                times[int(entry)] = sum(int(x) for x in fields[11:15]) / TICK
    total = 0.0
    for pid, spent in times.items():
        walk = pid
        while walk not in (root, 0, 1) and walk in parent:
            walk = parent[walk]
        if walk == root:
            total += spent
    return total


def host_busy_s() -> float:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / TICK


async def one_run(concurrency: int, runs: int) -> dict[str, float]:
    config = EvalConfig(suites=("web-miniwob",), split=None, agent=OracleConfig(), runs=runs)
    with tempfile.TemporaryDirectory() as out:
        cpu0, host0, start = tree_cpu_s(os.getpid()), host_busy_s(), time.perf_counter()
        summary = await evaluate(config, out, concurrency=concurrency)
        elapsed = time.perf_counter() - start
        cpu, host = tree_cpu_s(os.getpid()) - cpu0, host_busy_s() - host0
    if summary.outcomes.get("success", 0) != summary.ran:
        raise SystemExit(f"the oracle did not pass every episode: {dict(summary.outcomes)}")
    return {"eps": summary.ran / elapsed, "cpu": cpu / summary.ran, "host": host / summary.ran,
            "load": os.getloadavg()[0]}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the table shows medians")
    # 3 x 34 episodes per measurement: each starts its pool's envs (a context and renderer each) afresh, and at
    # --runs 1 those 8 startups were ~15% of c=8's CPU per episode; a long eval pays them once
    parser.add_argument("--runs", type=int, default=3, help="episodes per task (K) in each measurement")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; browser {chromium_path()}")
    print(f"switches: {' '.join(CHROMIUM_ARGS)}")
    browser = shared_browser()
    browser.acquire()  # one Chromium for the whole script, as in a long run
    try:
        await one_run(max(args.concurrency), 1)  # warm-up: browser launch, page files cached
        results: dict[int, list[dict[str, float]]] = {c: [] for c in args.concurrency}
        for round_ in range(args.repeats):
            for c in args.concurrency:
                row = await one_run(c, args.runs)
                results[c].append(row)
                print(f"  round {round_ + 1} c={c}: {row['eps']:.2f} episodes/s, {row['cpu']:.3f} CPU s/episode, "
                      f"load {row['load']:.2f}", flush=True)
    finally:
        await browser.release()
    base = statistics.median(r["eps"] for r in results[args.concurrency[0]])
    print(f"\n{'concurrency':>11} {'episodes/s':>11} {'vs c=' + str(args.concurrency[0]):>8} {'CPU s/ep':>9} "
          f"{'host CPU s/ep':>14} {'load avg':>9}")
    for c, rows in results.items():
        eps = statistics.median(r["eps"] for r in rows)
        print(f"{c:>11} {eps:>11.2f} {eps / base:>8.2f} {statistics.median(r['cpu'] for r in rows):>9.3f} "
              f"{statistics.median(r['host'] for r in rows):>14.3f} {statistics.median(r['load'] for r in rows):>9.2f}")
    if 8 in results and 1 in results:
        ratio = statistics.median(r["eps"] for r in results[8]) / statistics.median(r["eps"] for r in results[1])
        print(f"\nc=8 / c=1: {ratio:.2f}x (target >= 1.5x: {'ok' if ratio >= 1.5 else 'MISSED'})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
