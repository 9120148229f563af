"""The apps image (sandboxes/desktop-apps: Impress, GIMP, VLC, Thunderbird, Chromium), measured in one run.

    python benchmarks/desktop_apps.py [--runs 2] [--apps impress,gimp,...]

  image       size of envgym/desktop-apps:<hash> and of the desktop image it is built FROM (docker image inspect)
  launch      Desktop.launch(app, file) -> its window mapped (wait_window, settle 0), each run in a fresh desktop
  ready       launch -> the screen unchanged for 1 s (wait_idle): the window painted and the app idle
  memory      the container with the app open, after ready and one accessibility-tree read: Docker's figure (usage
              less inactive file pages, what `docker stats` shows; it includes page cache of the image's files
              and moves between runs) and "held" (anonymous memory + tmpfs); an idle desktop for reference

The host's load average is printed with the table: on a shared 2-core machine the figures move with it.
Builds the image first when it is missing (envgym_gui.apps.ensure_image).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from envgym.sandbox.docker import DockerEngine, DockerSandbox
from envgym.sandbox.images import tag_for
from envgym_gui._samples import container_memory, odp, png, wav
from envgym_gui.apps import EXTRA_APPS, ensure_image
from envgym_gui.desktop import PROFILE, Desktop

RUN_ID = "benchmark"


CASES = {  # app -> (path, file, window title regex)
    "impress": ("/home/user/Documents/review.odp", odp(), r"review\.odp - LibreOffice Impress"),
    "gimp": ("/home/user/Pictures/sky.png", png(), r"\[sky\]"),
    "vlc": ("/home/user/Videos/tone.wav", wav(), r"tone\.wav - VLC media player"),
    "thunderbird": (None, None, r"Local Folders - Mozilla Thunderbird"),
    "chromium": ("/home/user/page.html", b"<html><head><title>Hello page</title></head><body><h1>Hello</h1></body>"
                                         b"</html>", r"Hello page - Chromium"),
}


async def one(engine: DockerEngine, image: str, app: str | None) -> dict[str, float]:
    sb = DockerSandbox(image, PROFILE, engine=engine, run_id=RUN_ID)
    await sb.start()
    desktop = Desktop(sb)
    try:
        await desktop.start()
        row: dict[str, float] = {}
        if app is not None:
            path, data, title = CASES[app]
            if data is not None:
                await desktop.write_files({path: data})
            start = time.perf_counter()
            pid = await desktop.launch(app, path)
            await desktop.wait_window(title, timeout=180, settle=0, app=app, pid=pid)
            row["launch"] = time.perf_counter() - start
            settled = await desktop.wait_idle(quiet=1.0, timeout=60)
            row["ready"] = time.perf_counter() - start if settled else float("nan")  # a playing VLC's clock ticks
        else:
            await desktop.wait_idle(quiet=1.0, timeout=60)
        await desktop.a11y_tree(max_nodes=600)  # as an agent would: the app builds its accessible objects
        measured = await container_memory(engine, sb.id)
        row["memory"], row["held"], row["usage"] = measured.docker, measured.held, measured.usage
        return row
    finally:
        await desktop.close()
        await sb.stop()


async def main(runs: int, apps: list[str]) -> None:
    tag = await asyncio.to_thread(ensure_image, apps[0] if apps else "impress")
    async with DockerEngine(max_concurrency=2) as engine:
        sizes = {t: (await engine.call("inspect_image", t))["Size"] / 1e9 for t in (tag, tag_for("desktop"))}
        print(f"image {tag}: {sizes[tag]:.2f} GB (docker image inspect .Size); "
              f"its parent {tag_for('desktop')}: {sizes[tag_for('desktop')]:.2f} GB")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        idle = await one(engine, tag, None)
        print(f"idle desktop of this image: docker stats {idle['memory']:.0f} MiB, held {idle['held']:.0f} MiB")
        print(f"{'app':<12} {'launch p50 s':>12} {'ready p50 s':>12} {'docker stats MiB p50':>21} {'max':>5} "
              f"{'held MiB p50':>13} {'max':>5}")
        for app in apps:
            rows = [await one(engine, tag, app) for _ in range(runs)]
            ready = [r["ready"] for r in rows if r["ready"] == r["ready"]]
            print(f"{app:<12} {statistics.median(r['launch'] for r in rows):>12.2f} "
                  f"{f'{statistics.median(ready):.2f}' if ready else 'never idle':>12} "
                  f"{statistics.median(r['memory'] for r in rows):>21.0f} {max(r['memory'] for r in rows):>5.0f} "
                  f"{statistics.median(r['held'] for r in rows):>13.0f} {max(r['held'] for r in rows):>5.0f}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="fresh desktops per app")
    parser.add_argument("--apps", default=",".join(EXTRA_APPS), help="comma-separated app keys")
    args = parser.parse_args()
    asyncio.run(main(args.runs, [a for a in args.apps.split(",") if a]))
