"""GUI family latency and density: reset per app, step, screenshot, concurrent desktops, memory, oracle throughput.

- reset: ``env.reset`` of a task from the warm pool (a fresh desktop container already up: the task's files
  written, its application launched on them and its window awaited, settled, the first observation taken);
  p50/p95 per app (terminal, files, editor, calc, writer; impress and gimp from ``desktop-apps`` when that
  image is built, else a line says so). Between resets the pool refills (``--gap pool``: an episode outlasts
  a desktop's start) or ``--gap SECONDS`` pass (``0``: back to back). Each app's resets run in a process of
  their own, ``--rounds`` times, interleaved with ``--baseline`` when given: ``--baseline DIR`` is a tree of
  older code (``git archive COMMIT | tar -x -C DIR``; its desktop image built, ``envgym sandbox build
  desktop --dir DIR/sandboxes``), run by the same commands, so before and after see the same host load.
- phases: where this tree's reset time goes, p50 per desktop call (launch, window, LibreOffice's timers after
  the load, the still-screen settle, the observation's parts).
- step: one action (a key press the app answers) plus the next observation (screenshot, window list; the
  accessibility tree in a row of its own); screenshot alone (the root daemon's grab + PNG encode + transfer).
- density: N envs at once (``--density``, 1 and 8 by default), each stepping as fast as it can for
  ``--seconds``: steps/s in total, step p50/p95, and memory per desktop (the container's cgroup
  ``memory.current``: everything its processes hold, its tmpfs included) with Calc open; with ``--baseline``
  each tree's row in turn, in a process of its own.
- oracle: the reference solutions of every task of the suites, through ``envgym eval``'s engine at
  ``--concurrency``: episodes per minute and the success rate.

Every table row carries the host's load (1-minute average) when it was taken: on a shared host the figures
move with it. Targets (issues 14, 37): reset p50 <= 1.5 s, step p50 <= 150 ms, screenshot <= 30 ms, <= 300 MiB
a desktop (OSWorld: about 4.6 GiB per extra VM). Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
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


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


APPS = ("terminal", "files", "editor", "calc", "writer", "impress", "gimp")
"""The apps whose resets are measured, in this order; impress and gimp run in ``desktop-apps``."""


def task_of(app: str, suites: list[str]):  # a TaskSpec
    """A task of the suites that opens ``app``; for an app no suite opens (impress, gimp), a bare one: the app
    on an empty file of its kind (impress) or on no file."""
    first = None
    for suite in suites:
        for task in load_suite(suite):
            first = first or task
            if (task.initial_state.get("open") or {}).get("app") == app:
                return task
    return first.model_copy(update={"id": f"latency-{app}", "initial_state": {"open": {"app": app, "title": "."}}})


def image_missing(app: str) -> str | None:
    """Why ``app``'s desktops cannot start here (its image is not built), else None."""
    from envgym.sandbox import tag_for
    from envgym_gui.apps import image_for

    tag = tag_for(image_for(app))
    api = __import__("docker").APIClient(version="auto")
    try:
        return None if api.images(name=tag) else f"{tag} is not built (envgym sandbox build {image_for(app)})"
    finally:
        api.close()


async def refilled(within: float = 90.0) -> None:
    """Until this loop's warm pools are full and released desktops removed (the leases module's own state,
    read here only: it has no public accessor)."""
    from envgym.sandbox import leases

    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        shared = [s for (lid, _), s in leases._shared.items() if lid == id(loop)]
        if all(s.pool.ready >= s.pool.size and not s.stopping for s in shared):
            return
        await asyncio.sleep(0.1)


PHASES = ("launch", "wait_window", "office_fast_forward", "office_quiet", "still_screenshot", "wait_idle", "windows",
          "screenshot")
"""The desktop calls a reset is made of, timed one by one (``Desktop`` methods): the app's launch (for Calc and
Writer the document's load in the prewarmed LibreOffice), its window, LibreOffice's own timers after the load,
the still-screen settle, the first observation's parts."""


def timing_phases() -> dict[str, float]:
    """Wrap :data:`PHASES` so that each call adds its seconds to the returned dict (this process only)."""
    from envgym_gui.desktop import Desktop

    spent: dict[str, float] = {}

    def timed(name: str, method):
        async def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return call

    for name in PHASES:
        if hasattr(Desktop, name):
            setattr(Desktop, name, timed(name, getattr(Desktop, name)))
    return spent


async def reset_times(app: str, suites: list[str], resets: int, gap: str) -> list[tuple[float, float, dict]]:
    """(seconds, 1-minute load, seconds per phase) of ``resets`` resets of one task of ``app``, after one that
    fills the pool."""
    task = task_of(app, suites)
    out = []
    spent = timing_phases()
    async with envgym.make("gui/desktop-v1", a11y=False) as env:
        await env.reset(task=task)
        for _ in range(resets):
            if gap == "pool":
                await refilled()
            elif float(gap) > 0:
                await asyncio.sleep(float(gap))
            spent.clear()
            start = time.perf_counter()
            await env.reset(task=task)
            out.append((time.perf_counter() - start, load1(), dict(spent)))
    return out


def worker(args: argparse.Namespace) -> None:
    """``--worker APP``: one app's resets in this process (this tree's code), as JSON on stdout;
    ``--worker density:N``: the density row of N desktops."""
    if args.worker.startswith("density:"):
        per_app = one_per_app([t for suite in args.suites for t in load_suite(suite)])
        task = per_app.get("calc") or next(iter(per_app.values()))
        print(json.dumps(asyncio.run(density(task, int(args.worker.split(":")[1]), args.seconds))))
        return
    print(json.dumps(asyncio.run(reset_times(args.worker, args.suites, args.resets, args.gap))))


class Trees:
    """Runs a worker of this script in each tree of code (its own envgym, GUI family and task data)."""

    def __init__(self, trees: dict[str, Path]) -> None:
        self.trees = trees
        self.links = Path(tempfile.mkdtemp(prefix="gui-latency-"))
        for label, tree in trees.items():  # each tree's own task data (envgym_tasks is the checkout's tasks/)
            (self.links / str(abs(hash(label))) / "envgym_tasks").parent.mkdir()
            (self.links / str(abs(hash(label))) / "envgym_tasks").symlink_to(tree / "tasks")

    def run(self, label: str, what: str, args: argparse.Namespace):  # the worker's JSON, or None
        tree = self.trees[label]
        paths = [str(self.links / str(abs(hash(label)))), str(tree), str(tree / "environments" / "gui")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", what, "--resets", str(args.resets),
               "--gap", args.gap, "--seconds", str(args.seconds), "--suites", *args.suites]
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode:
            print(f"<!-- {label} {what}: failed: {done.stderr[-600:]} -->", file=sys.stderr)
            return None
        return json.loads(done.stdout.strip().splitlines()[-1])


def resets_by_tree(apps: list[str], trees: Trees, args: argparse.Namespace) -> dict:
    """(tree label, app) -> [(seconds, load)], the trees' runs interleaved round by round."""
    found: dict = {}
    for round_ in range(args.rounds):
        for app in apps:
            for label in trees.trees:
                rows = trees.run(label, app, args)
                if rows is not None:
                    found.setdefault((label, app), []).extend(rows)
                    p50 = pct([r[0] for r in rows], 0.5) * 1000
                    print(f"  {label} {app} round {round_ + 1}/{args.rounds}: p50 {p50:.0f} ms of {len(rows)} "
                          f"(load {load()})", file=sys.stderr, flush=True)
    return found


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


async def latency(tasks: dict[str, object], steps: int) -> list[tuple[str, float, float, str]]:
    rows = []
    async with envgym.make("gui/desktop-v1", a11y=False) as env:
        gui = env.unwrapped
        task = tasks.get("editor") or next(iter(tasks.values()))
        for label, a11y in (("step: key + screenshot + windows", False), ("step: ... + accessibility tree", True)):
            gui.a11y = a11y
            await env.reset(task=task)
            times = []
            for i in range(steps):
                start = time.perf_counter()
                await gui.step(Action.call("key", keys="Right" if i % 2 else "Left"))
                times.append(time.perf_counter() - start)
            rows.append((label, pct(times, 0.5), pct(times, 0.95), load()))
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            await gui.desktop.screenshot()
            times.append(time.perf_counter() - start)
        rows.append(("screenshot alone (1280x720 PNG)", pct(times, 0.5), pct(times, 0.95), load()))
    return rows


async def density(task, n: int, seconds: float) -> tuple[int, float, float, float, float, float | None, str]:
    """n, steps/s in all, step p50 and p95 (s), memory per desktop median and max (MiB), load."""
    envs = [envgym.make("gui/desktop-v1", a11y=False) for _ in range(n)]
    try:
        await asyncio.gather(*(env.reset(task=task) for env in envs))
        await refilled()
        memory = [container_memory_mib(env.unwrapped._sandbox.id) for env in envs]
        counts = [0] * n
        times: list[float] = []
        stop = time.perf_counter() + seconds

        async def drive(i: int) -> None:
            while time.perf_counter() < stop:
                started = time.perf_counter()
                await envs[i].unwrapped.step(Action.call("key", keys="Right" if counts[i] % 2 else "Left"))
                times.append(time.perf_counter() - started)
                counts[i] += 1

        start = time.perf_counter()
        await asyncio.gather(*(drive(i) for i in range(n)))
        elapsed = time.perf_counter() - start
        taken = load()
        known = [m for m in memory if m is not None]
        return (n, sum(counts) / elapsed, pct(times, 0.5), pct(times, 0.95),
                statistics.median(known) if known else float("nan"), max(known) if known else None, taken)
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
    parser.add_argument("--resets", type=int, default=10, help="resets per app and round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--apps", nargs="*", default=list(APPS))
    parser.add_argument("--gap", default="pool", help="between resets: 'pool' (until refilled) or seconds")
    parser.add_argument("--baseline", type=Path, help="a tree of older code, measured beside this one")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--density", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--suites", nargs="*", default=list(SUITES))
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-oracle", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    tasks = [t for suite in args.suites for t in load_suite(suite)]
    per_app = one_per_app(tasks)
    print(f"# GUI latency ({os.cpu_count()} cores; load {load()})\n")
    labels = {"this tree": Path(__file__).resolve().parents[1]}
    if args.baseline:
        labels = {"baseline": args.baseline.resolve(), **labels}
    trees = Trees(labels)
    if not args.skip_latency:
        apps = []
        for app in args.apps:
            why = image_missing(app)
            if why:
                print(f"- reset: {app} skipped: {why}")
            else:
                apps.append(app)
        found = resets_by_tree(apps, trees, args)
        print(f"\n## Reset per app ({args.rounds} round(s) of {args.resets}; gap between resets: {args.gap})\n")
        print("| app | code | resets | p50 (ms) | p95 (ms) | load during (min-max) | target |")
        print("|---|---|---:|---:|---:|---|---|")
        for app in apps:
            for label in trees.trees:
                rows = found.get((label, app))
                if not rows:
                    print(f"| {app} | {label} | 0 | - | - | - | <= 1500 |")
                    continue
                times, loads = [r[0] for r in rows], [r[1] for r in rows]
                print(f"| {app} | {label} | {len(times)} | {pct(times, 0.5) * 1000:.0f} | "
                      f"{pct(times, 0.95) * 1000:.0f} | {min(loads):.1f}-{max(loads):.1f} | <= 1500 |")
        print("\n## Where a reset's time goes (p50 per phase, ms; 'other': the rest of the reset)\n")
        print("| app | code | " + " | ".join(PHASES) + " | other |")
        print("|---|---|" + "---:|" * (len(PHASES) + 1))
        for app in apps:
            for label in trees.trees:
                rows = [r for r in found.get((label, app), []) if len(r) > 2]
                if rows:  # a baseline older than the phases has none
                    cells = [pct([r[2].get(name, 0.0) for r in rows], 0.5) * 1000 for name in PHASES]
                    other = pct([r[0] - sum(r[2].values()) for r in rows], 0.5) * 1000
                    print(f"| {app} | {label} | " + " | ".join(f"{c:.0f}" for c in cells) + f" | {other:.0f} |")
        print("\n## Step and screenshot (one desktop)\n")
        print("| measure | p50 (ms) | p95 (ms) | load after | target |")
        print("|---|---:|---:|---|---|")
        for label, p50, p95, taken in asyncio.run(latency(per_app, args.steps)):
            target = "<= 30" if "alone" in label else "<= 150"
            print(f"| {label} | {p50 * 1000:.0f} | {p95 * 1000:.0f} | {taken} | {target} |")
    task = per_app.get("calc") or next(iter(per_app.values()))
    print(f"\n## Density: concurrent desktops, {task.initial_state['open']['app']} open (each tree in turn)\n")
    print("| desktops | code | steps/s (all) | vs 1 | step p50 (ms) | step p95 (ms) | memory per desktop, median "
          "(MiB) | max (MiB) | load after |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    base: dict[str, float] = {}
    for n in args.density:
        for label in trees.trees:
            row = trees.run(label, f"density:{n}", args)
            if row is None:
                print(f"| {n} | {label} | failed | | | | | | |")
                continue
            count, rate, p50, p95, median, peak, taken = row
            base.setdefault(label, rate)
            print(f"| {count} | {label} | {rate:.1f} | {rate / base[label]:.2f}x | {p50 * 1000:.0f} | "
                  f"{p95 * 1000:.0f} | {median:.0f} | {'n/a' if peak is None else f'{peak:.0f}'} | {taken} |",
                  flush=True)
    if not args.skip_oracle:
        n, passed, elapsed = oracle_run(tuple(args.suites), args.concurrency)
        print(f"\n## Oracle over {', '.join(args.suites)} at concurrency {args.concurrency} (load {load()})\n")
        print("| episodes | passed | seconds | episodes/minute |")
        print("|---:|---:|---:|---:|")
        print(f"| {n} | {passed} | {elapsed:.0f} | {n / elapsed * 60:.1f} |")
    return None


if __name__ == "__main__":
    main()
