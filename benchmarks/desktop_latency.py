"""The desktop container itself (sandboxes/desktop + envgym_gui.desktop), measured in one run.

    python benchmarks/desktop_latency.py [--shots 30] [--runs 2]

  image            size of envgym/desktop:<hash>
  desktop start    DockerSandbox.start() + Desktop.start() + the first screenshot (container start -> pixels)
  launch <app>     Desktop.launch(app, file) -> its window mapped (wait_window, settle 0), each app in a fresh
                   desktop; calc / writer also with LibreOffice prewarmed (Desktop.start(prewarm_apps=...))
  screenshot       PNG 1280x720, PNG at scale 0.5, JPEG (target <= 30 ms for the PNG)
  a11y tree        Desktop.a11y_tree() with Calc open
  memory           `docker stats --no-stream` of the container with Calc open (and of an idle desktop)

The host's load average is printed with the table: on a shared 2-core machine the figures move with it.
Needs a running engine and the desktop image (envgym sandbox build desktop).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time

from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym.sandbox.images import tag_for
from envgym_gui._samples import odf
from envgym_gui.desktop import PROFILE, Desktop

RUN_ID = "benchmark"


FILES = {
    "/home/user/notes.txt": b"hello\n",
    "/home/user/budget.ods": odf("application/vnd.oasis.opendocument.spreadsheet",
                                  '<office:spreadsheet><table:table table:name="Sheet1"><table:table-row>'
                                  '<table:table-cell office:value-type="float" office:value="1"><text:p>1</text:p>'
                                  "</table:table-cell></table:table-row></table:table></office:spreadsheet>"),
    "/home/user/report.odt": odf("application/vnd.oasis.opendocument.text",
                                  "<office:text><text:p>Report</text:p></office:text>"),
}
APPS = [("editor", "/home/user/notes.txt", r"notes\.txt"), ("files", "/home/user", r"^user$"),
        ("terminal", "/home/user", r"^Terminal$"), ("image", None, r"Drawing"),
        ("calc", "/home/user/budget.ods", r"budget\.ods"), ("writer", "/home/user/report.odt", r"report\.odt")]


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[round(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:7.0f} ms  p95 {p95 * 1000:7.0f} ms  n={len(ordered)}"


def image_mb(image: str) -> str:
    size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", image], capture_output=True,
                          text=True).stdout.strip()
    return f"{int(size) / 2**20:.0f} MiB"


def stats_mb(container: str) -> str:
    out = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", container],
                         capture_output=True, text=True).stdout.strip()
    return out.split(" / ")[0]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shots", type=int, default=30)
    parser.add_argument("--runs", type=int, default=2, help="launches per app (each in a fresh desktop)")
    args = parser.parse_args()
    image = tag_for("desktop")
    rows: list[tuple[str, str]] = [("image", f"{image}  {await asyncio.to_thread(image_mb, image)}")]
    load_before = os.getloadavg()
    async with DockerEngine(max_concurrency=4) as engine:
        starts: list[float] = []
        launches: dict[str, list[float]] = {}

        async def fresh(prewarm: tuple[str, ...] = ()) -> tuple[DockerSandbox, Desktop, float]:
            begin = time.monotonic()
            sb = DockerSandbox(image, PROFILE, engine=engine, run_id=RUN_ID)
            await sb.start()
            d = Desktop(sb)
            await d.start(prewarm_apps=prewarm)
            await d.screenshot()
            return sb, d, time.monotonic() - begin

        for run in range(args.runs):
            for app, path, title in APPS:
                sb, d, took = await fresh()
                starts.append(took)
                try:
                    await d.write_files(FILES)
                    begin = time.monotonic()
                    await d.launch(app, path)
                    await d.wait_window(title, timeout=180, settle=0)
                    launches.setdefault(f"launch {app} (cold)", []).append(time.monotonic() - begin)
                    if app == "calc" and run == 0:
                        await asyncio.sleep(2)
                        rows.append(("memory, Calc open", await asyncio.to_thread(stats_mb, sb.id)))
                finally:
                    await sb.stop()
            for app, path, title in APPS[4:]:
                sb, d, _ = await fresh(prewarm=("calc",))
                try:
                    await d.write_files(FILES)
                    await asyncio.sleep(8)  # the pool's warm-up time: LibreOffice comes up windowless meanwhile
                    begin = time.monotonic()
                    await d.launch(app, path)
                    await d.wait_window(title, timeout=180, settle=0)
                    launches.setdefault(f"launch {app} (prewarmed)", []).append(time.monotonic() - begin)
                finally:
                    await sb.stop()
        rows.append(("desktop start (container -> first screenshot)", ms(starts)))
        rows += [(name, ms(values)) for name, values in launches.items()]

        sb, d, _ = await fresh()
        try:
            rows.append(("memory, idle desktop", await asyncio.to_thread(stats_mb, sb.id)))
            await d.write_files(FILES)
            await d.launch("calc", "/home/user/budget.ods")
            await d.wait_window(r"budget\.ods", timeout=180)
            for label, kwargs in (("screenshot png 1280x720", {}), ("screenshot png scale 0.5", {"scale": 0.5}),
                                  ("screenshot jpeg 1280x720", {"fmt": "jpeg"})):
                times = []
                for _ in range(args.shots):
                    begin = time.monotonic()
                    await d.screenshot(**kwargs)
                    times.append(time.monotonic() - begin)
                rows.append((label, ms(times)))
            times = []
            for _ in range(5):
                begin = time.monotonic()
                tree = await d.a11y_tree()
                times.append(time.monotonic() - begin)
            rows.append((f"a11y tree, Calc open ({len(tree)} nodes)", ms(times)))
        finally:
            await sb.stop()
    load_after = os.getloadavg()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"load average {load_before[0]:.1f} -> {load_after[0]:.1f} (2 cores)")


if __name__ == "__main__":
    asyncio.run(main())
