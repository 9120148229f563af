"""Docker sandbox latencies and footprint, measured side by side in one run.

    python benchmarks/sandbox_latency.py [--n 20] [--image envgym/base:<hash>]

  cold start       DockerSandbox.start() (create + start a hardened container), sequentially
  pool acquire     SandboxPool.acquire() from a filled pool (target <= 20 ms)
  round trip       `true` through the persistent session vs a fresh `docker exec` (target <= 15 ms p50)
  start 16 / 32    wall time to start N sandboxes at once (engine concurrency 8)
  memory           per idle sandbox, from the container's memory cgroup, with and without the session helper

Needs a running engine and the base image (sandboxes/host-setup.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from envgym.sandbox import SandboxPool
from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym.sandbox.images import tag_for

RUN_ID = "benchmark"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(name: str, ms: list[float], target: str = "") -> tuple[str, str, str, str, str]:
    return (name, f"{statistics.median(ms):8.1f}", f"{pct(ms, 0.95):8.1f}", str(len(ms)), target)


def cgroup_v1_mb(full_id: str) -> float | None:
    path = Path(f"/sys/fs/cgroup/memory/docker/{full_id}/memory.stat")
    if not path.exists():
        return None
    stat = dict(line.split() for line in path.read_text().splitlines())
    return (int(stat["total_rss"]) + int(stat["total_mapped_file"])) / 2**20  # anonymous + mapped, no free cache


async def memory_mb(engine: DockerEngine, cid: str) -> float:
    full = (await engine.call("inspect_container", cid))["Id"]
    v1 = await asyncio.to_thread(cgroup_v1_mb, full)
    if v1 is not None:
        return v1
    stats = await engine.call("stats", cid, stream=False)
    return (stats["memory_stats"]["usage"] - stats["memory_stats"].get("stats", {}).get("inactive_file", 0)) / 2**20


async def main(n: int, image: str) -> None:
    rows = []
    async with DockerEngine(max_concurrency=8) as engine:
        async with DockerSandbox(image, engine=engine, run_id=RUN_ID):  # warm the daemon's caches
            pass
        cold = []
        for _ in range(n):
            sb = DockerSandbox(image, engine=engine, run_id=RUN_ID)
            t = time.perf_counter()
            await sb.start()
            cold.append((time.perf_counter() - t) * 1e3)
            await sb.stop()
        rows.append(row("cold start", cold))

        acquire = []
        async with SandboxPool(image, 4, engine=engine, run_id=RUN_ID, reap=False) as pool:
            for _ in range(n):
                while pool.ready < 4:  # noqa: ASYNC110 - measure a filled pool, as between episodes
                    await asyncio.sleep(0.05)
                t = time.perf_counter()
                sb = await pool.acquire()
                acquire.append((time.perf_counter() - t) * 1e3)
                await sb.stop()
        rows.append(row("pool acquire", acquire, "<= 20 ms"))

        async with DockerSandbox(image, engine=engine, run_id=RUN_ID) as sb:
            await sb.session.open()
            session, fresh = [], []
            for _ in range(max(n, 50)):
                t = time.perf_counter()
                await sb.session.exec("true")
                session.append((time.perf_counter() - t) * 1e3)
                t = time.perf_counter()
                await sb.exec("true")
                fresh.append((time.perf_counter() - t) * 1e3)
        rows.append(row("round trip: session", session, "<= 15 ms p50"))
        rows.append(row("round trip: docker exec", fresh, "(~50 ms)"))

        footprint = {}
        for count in (16, 32):
            sandboxes = [DockerSandbox(image, engine=engine, run_id=RUN_ID) for _ in range(count)]
            t = time.perf_counter()
            await asyncio.gather(*(sb.start() for sb in sandboxes))
            rows.append((f"start {count} at once", f"{(time.perf_counter() - t) * 1e3:8.1f}", "", "1", "total"))
            if count == 32:
                footprint["idle"] = [await memory_mb(engine, sb.id) for sb in sandboxes[:8]]
                await asyncio.gather(*(sb.session.open() for sb in sandboxes[:8]))
                footprint["idle + session"] = [await memory_mb(engine, sb.id) for sb in sandboxes[:8]]
            await asyncio.gather(*(sb.stop() for sb in sandboxes))
    print(f"{'measure':<32}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}  target")
    for name, p50, p95, count, target in rows:
        print(f"{name:<32}{p50:>10}{p95:>10}{count:>6}  {target}")
    for name, values in footprint.items():
        print(f"{'memory/sandbox, ' + name:<32}{statistics.median(values):>9.1f}M{'':>10}{len(values):>6}  "
              "median; rss + mapped files of the container's cgroup")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--image", default=None, help="default: the current envgym/base tag")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.image or tag_for("base")))
