"""Are GUI resets identical? N resets of one task per app, each first observation hashed (screenshot bytes,
accessibility tree text, window list), counted against the most common one.

    python benchmarks/gui_determinism.py --app calc --n 200
    python benchmarks/gui_determinism.py --app calc writer --n 200 --out /tmp/diffs   # odd ones saved as PNG

Each reset takes a fresh desktop from the warm pool (``gui/desktop-v1``, one env, resets in sequence), as an
episode would. Between resets the pool refills (``--gap pool``, the default: an episode outlasts a desktop's
start, so in use a reset finds its desktop ready and nothing else starting), or a fixed number of seconds
(``--gap 0``: back to back, the pool's refill then runs during the next resets). Prints per app: identical
resets of N, distinct observations, reset p50/p95, and the host's load before and after. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import hashlib
import os
import sys
import time
from pathlib import Path

import envgym
from envgym.task import load_suite
from envgym_gui import SUITES


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def task_for(app: str):  # a TaskSpec
    for suite in SUITES:
        for task in load_suite(suite):
            if (task.initial_state.get("open") or {}).get("app") == app:
                return task
    raise SystemExit(f"no task of {SUITES} opens {app!r}")


async def refilled(within: float = 90.0) -> None:
    """Until this loop's warm pools are full and the released desktops removed (the leases module's own state,
    read here only: no public accessor exists for it)."""
    from envgym.sandbox import leases

    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        shared = [s for (lid, _), s in leases._shared.items() if lid == id(loop)]
        if all(s.pool.ready >= s.pool.size and not s.stopping for s in shared):
            return
        await asyncio.sleep(0.1)


async def between(gap: str) -> None:
    if gap == "pool":
        await refilled()
    elif float(gap) > 0:
        await asyncio.sleep(float(gap))


def save(stem: Path, png: bytes, tree: str) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".png").write_bytes(png)
    stem.with_suffix(".txt").write_text(tree)


async def run(app: str, n: int, out: Path | None, gap: str) -> tuple[int, int, list[float], str]:
    task = task_for(app)
    seen: collections.Counter[str] = collections.Counter()
    first: dict[str, bytes] = {}
    times: list[float] = []
    async with envgym.make("gui/desktop-v1", a11y=True) as env:
        await env.reset(task=task)  # the pool fills
        for i in range(n):
            await between(gap)
            start = time.perf_counter()
            obs, _ = await env.reset(task=task)
            times.append(time.perf_counter() - start)
            png = base64.b64decode(obs.screenshot.png_base64)
            digest = hashlib.sha256(png + (obs.a11y or "").encode() + repr(obs.windows).encode()).hexdigest()
            if digest not in first:
                first[digest] = png
                if out is not None:
                    await asyncio.to_thread(save, out / f"{app}-{i:03d}-{digest[:8]}", png, obs.a11y or "")
            seen[digest] += 1
            if (i + 1) % 10 == 0:
                print(f"  {app}: {seen.most_common(1)[0][1]} identical of {i + 1}, {len(seen)} distinct "
                      f"(load {load()})", file=sys.stderr, flush=True)
    return seen.most_common(1)[0][1], len(seen), times, task.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app", nargs="+", default=["calc", "writer"])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--gap", default="pool", help="between resets: 'pool' (until refilled) or seconds")
    parser.add_argument("--out", type=Path, help="save the first observation of each kind here")
    args = parser.parse_args()
    print(f"# GUI reset determinism ({os.cpu_count()} cores; gap between resets: {args.gap})\n")
    print("| app | task | identical | distinct | reset p50 (ms) | p95 (ms) | load before | load after |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for app in args.app:
        before = load()
        same, distinct, times, task_id = asyncio.run(run(app, args.n, args.out, args.gap))
        print(f"| {app} | {task_id} | {same}/{args.n} | {distinct} | {pct(times, 0.5) * 1000:.0f} | "
              f"{pct(times, 0.95) * 1000:.0f} | {before} | {load()} |", flush=True)


if __name__ == "__main__":
    main()
