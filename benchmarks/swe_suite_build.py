"""SWE bug-injection suites: validation cost per candidate (one-at-a-time vs batched), and the shipped data.

    python benchmarks/swe_suite_build.py                       # both tables
    python benchmarks/swe_suite_build.py --lib toolz --tries 16 --workers 1,2
    python benchmarks/swe_suite_build.py --data-only           # no containers: the shipped-data table only

Cost: the same library, the same seeded candidates, validated by ``build_suite`` (one container, five execs and
a fresh ``python -m pytest`` per run, every candidate in turn) and by ``build_library`` (the resumable parallel
build: batches through the in-container driver, forked pytest with a kept bytecode cache) at each worker count,
each in a fresh cache (no journal) with the candidate lists computed beforehand. Rows run interleaved
``--rounds`` times; the load average is printed beside each, since the machine may be shared.

Data: per library, instances kept, candidates tried, the per-function cap and why the rest were dropped
(``build.json``), and the size on disk of the bundled suites (``tasks/swe-*``) and of the scaled set
(``tasks/swe-injected``, whose instances are stored xz-compressed; their plain-JSON size is printed beside).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from envgym.plugin import suites_root
from envgym_swe.inject.build import INJECTED, _plan, build_suite
from envgym_swe.inject.parallel import BuildConfig, build_library
from envgym_swe.sources import CACHE, fetch_sdist, library


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def cost(lib_name: str, tries: int, workers: list[int], rounds: int, batch: int) -> None:
    from envgym_swe.inject.__main__ import default_image

    image = default_image()
    lib = library(lib_name)
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        (warm / "sdists").mkdir(parents=True)
        shutil.copy(fetch_sdist(lib), warm / "sdists")
        _plan(lib_name, 0, warm)  # candidate lists cached: the rows time validation, not the AST walk
        print(f"validation cost, {lib.dist}=={lib.version}, first {tries} candidates of seed 0")
        print(f"{'round':>5} {'build':<22} {'seconds':>8} {'tried':>6} {'run':>5} {'s/tried':>8} {'kept':>5}  load")
        for r in range(rounds):
            rows: list[tuple[str, int | None]] = [("one at a time", None), *((f"batched, {w} worker(s)", w)
                                                                            for w in workers)]
            for label, w in rows:
                cache = Path(tmp) / f"run-{r}-{w}"
                shutil.copytree(warm, cache)
                started = time.monotonic()
                if w is None:
                    report = asyncio.run(build_suite(lib_name, 10**6, 0, image, max_tries=tries, cache=cache,
                                                     log=lambda _: None))
                    ran = report.tried
                else:
                    report = asyncio.run(build_library(lib_name, BuildConfig(n=10**6, max_tries=tries), image,
                                                       workers=w, batch=batch, cache=cache, log=lambda _: None))
                    ran = report.run
                seconds = time.monotonic() - started
                print(f"{r:>5} {label:<22} {seconds:>8.1f} {report.tried:>6} {ran:>5} "
                      f"{seconds / max(report.tried, 1):>8.2f} {len(report.instances):>5}  {load()}", flush=True)


def data() -> None:
    root = suites_root()
    folders = sorted(p for p in root.glob("swe-*") if (p / "build.json").is_file() and p.name != INJECTED)
    folders += sorted(p for p in (root / INJECTED).glob("*") if (p / "build.json").is_file())
    print(f"{'library':<16} {'kept':>5} {'tried':>6} {'cap':>3} {'run':>6} {'worker s':>9} {'s/run':>6}  dropped")
    kept = tried = 0
    for folder in folders:
        meta = json.loads((folder / "build.json").read_text())
        run, secs = meta.get("candidates_run"), meta.get("worker_seconds")
        per = f"{secs / run:.2f}" if run and secs else "-"
        print(f"{meta['library']:<16} {meta['kept']:>5} {meta['tried']:>6} {meta['per_function']:>3} {run or '-':>6} "
              f"{secs or '-':>9} {per:>6}  "
              + ", ".join(f"{k} {v}" for k, v in meta["rejected"].items()))
        kept, tried = kept + meta["kept"], tried + meta["tried"]
    print(f"{'total':<16} {kept:>5} {tried:>6}   ({len(folders)} libraries)")
    bundled = [str(p) for p in root.glob("swe-*") if p.name != INJECTED]
    for label, paths in (("bundled suites (tasks/swe-*)", bundled),
                         ("scaled set (tasks/swe-injected)", [str(root / INJECTED)])):
        paths = [p for p in paths if Path(p).exists()]
        if paths:
            out = subprocess.run(["du", "-cb", *paths], capture_output=True, text=True, check=True).stdout
            print(f"on disk, {label}: {int(out.splitlines()[-1].split()[0]) / 1e6:.1f} MB")
    packed = sorted((root / INJECTED).glob("*/instances.swebench.json.xz"))
    if packed:
        plain = sum(len(lzma.decompress(p.read_bytes())) for p in packed)
        print(f"scaled set instances: {sum(p.stat().st_size for p in packed) / 1e6:.2f} MB xz-compressed, "
              f"{plain / 1e6:.1f} MB as plain JSON")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib", default="toolz")
    parser.add_argument("--tries", type=int, default=16)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--data-only", action="store_true")
    args = parser.parse_args()
    if not args.data_only:
        cost(args.lib, args.tries, [int(w) for w in args.workers.split(",")], args.rounds, args.batch)
        print()
    data()


if __name__ == "__main__":
    CACHE.mkdir(parents=True, exist_ok=True)
    main()
