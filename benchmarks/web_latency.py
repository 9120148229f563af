"""Web family latency and concurrency: reset time, step latency, and 16/32 concurrent episodes.

- reset: ``env.reset`` of a shop task on a warm shared browser (the finished episode's context recycled, a
  fresh database, first page load and observation); p50/p95 over ``--resets``. Two rows: after an episode of
  3 steps and back to back. (With ``recycle=False`` the env opens the next context in the background while
  the agent works; back to back, the reset waits for it.)
- step: one action plus the observation that follows (clicks alternating between two pages, so every step
  navigates), p50/p95 without and with a screenshot (JPEG, downscaled to half size by Chromium).
- concurrency: N envs in one process share one Chromium, each stepping as fast as it can for ``--seconds``;
  steps/s in total, and memory (RSS of this Python process plus every Chromium process of the shared browser).

- ``--compare-binaries``: Debian's ``chromium`` against its ``chromium-headless-shell`` (the default when
  installed), same switches, same app: context + page + first load, and a navigating click.

Targets (issue 7): reset <= 300 ms, step p50 <= 150 ms without screenshots. Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

import envgym
from envgym.task import load_suite
from envgym.types import Action
from envgym_web.browser import shared_browser


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def browser_pids(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


STEPS = (Action.call("click", element_id="nav-cart"), Action.call("click", element_id="nav-orders"))


async def latency(task, resets: int, steps: int) -> list[tuple[str, float, float]]:
    rows = []
    async with envgym.make("web/shop-v1") as env:
        await env.reset(task=task)  # warm: browser launched, template database cached
        for label, episode_steps in (("reset (after 3 steps)", 3), ("reset (back to back)", 0)):
            times = []
            for _ in range(resets):
                for i in range(episode_steps):
                    await env.unwrapped.step(STEPS[i % 2])
                start = time.perf_counter()
                await env.reset(task=task)
                times.append(time.perf_counter() - start)
            rows.append((label, pct(times, 0.5), pct(times, 0.95)))
        for label, pixels in (("step (no screenshot)", False), ("step (screenshot)", True)):
            await env.reset(task=task, options={"screenshot": pixels})
            times = []
            for i in range(steps):
                start = time.perf_counter()
                await env.unwrapped.step(STEPS[i % 2])  # no step limit: the bare env
                times.append(time.perf_counter() - start)
            rows.append((label, pct(times, 0.5), pct(times, 0.95)))
    return rows


async def concurrent(task, n: int, seconds: float) -> tuple[float, float, float]:
    envs = [envgym.make("web/shop-v1") for _ in range(n)]
    browser = shared_browser()
    browser.acquire()  # hold the browser across the whole measurement
    try:
        await asyncio.gather(*(e.reset(task=task) for e in envs))
        counts = [0] * n
        deadline = time.perf_counter() + seconds
        peak = 0.0

        async def run(i: int) -> None:
            while time.perf_counter() < deadline:
                await envs[i].unwrapped.step(STEPS[counts[i] % 2])
                counts[i] += 1

        async def sample() -> None:
            nonlocal peak
            while time.perf_counter() < deadline:
                pids = [os.getpid(), *browser_pids(browser.marker)]
                peak = max(peak, await asyncio.to_thread(rss_mb, pids))
                await asyncio.sleep(0.5)

        start = time.perf_counter()
        await asyncio.gather(*(run(i) for i in range(n)), sample())
        elapsed = time.perf_counter() - start
        return sum(counts) / elapsed, peak, peak / n
    finally:
        for env in envs:
            await env.close()
        await browser.release()


async def compare_binaries(task, rounds: int) -> None:
    from playwright.async_api import async_playwright

    from envgym_web.browser import CHROMIUM_ARGS, HEADLESS_SHELL

    print(f"\n{'binary':<26}{'context+page+load p50':>22}{'click p50 ms':>14}")
    async with envgym.make("web/shop-v1") as env, async_playwright() as playwright:
        await env.reset(task=task)
        origin = env.unwrapped.server.origin
        installed = {b: os.path.exists(b) for b in ("/usr/bin/chromium", HEADLESS_SHELL)}  # noqa: ASYNC240 - two stats
        for binary, present in installed.items():
            if not present:
                print(f"{binary:<26}{'not installed':>22}")
                continue
            browser = await playwright.chromium.launch(executable_path=binary, args=list(CHROMIUM_ARGS))
            opens, clicks = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                context = await browser.new_context()
                page = await context.new_page()
                await page.goto(origin + "/", wait_until="load")
                opens.append(time.perf_counter() - start)
                for i in range(4):
                    start = time.perf_counter()
                    await page.click("#nav-cart" if i % 2 else "#nav-orders")
                    await page.wait_for_load_state("load")
                    clicks.append(time.perf_counter() - start)
                await context.close()
            await browser.close()
            print(f"{Path(binary).name:<26}{pct(opens, 0.5) * 1000:>22.1f}{pct(clicks, 0.5) * 1000:>14.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=30)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[16, 32])
    parser.add_argument("--compare-binaries", action="store_true", help="also time chromium vs its headless shell")
    args = parser.parse_args()
    task = next(t for t in load_suite("web-shop") if t.id == "shop-buy-00")
    from envgym_web.browser import chromium_path

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; browser {chromium_path()}")
    print(f"\n{'measure':<24}{'p50 ms':>10}{'p95 ms':>10}")
    for label, p50, p95 in await latency(task, args.resets, args.steps):
        print(f"{label:<24}{p50 * 1000:>10.1f}{p95 * 1000:>10.1f}")
    print(f"\n{'episodes':>8}{'steps/s':>10}{'peak RSS MB':>14}{'MB/episode':>12}")
    for n in args.concurrency:
        rate, peak, per = await concurrent(task, n, args.seconds)
        print(f"{n:>8}{rate:>10.1f}{peak:>14.0f}{per:>12.1f}")
    if args.compare_binaries:
        await compare_binaries(task, max(3, args.resets // 3))
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
