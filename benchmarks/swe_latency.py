"""SWE family latencies, measured side by side in one run.

    python benchmarks/swe_latency.py [--suite swe-parse ...] [--starts 10] [--concurrency 2 4] [--skip-build]
                                     [--save NOW.json] [--baseline BEFORE.json]

  image build      per repository image: first build (no Docker layer cache) and cached (tag present)
  episode start    env.reset(): a container from a cold pool, from the warm pool (a new env), and the same
                   env's next episode after a submit (today a fresh container from the warm pool, the old one
                   stopped in the background; before fresh-container isolation, the same container with
                   /testbed reset by git), plus the
                   cost of filling the /testbed tmpfs from the image's pristine copy (part of a container start)
  grading          the submit step of an oracle episode (the diff read, then hidden tests run in a fresh
                   container), per task
  suite (oracle)   every task of the bundled swe-* suites (and the demo) through the oracle at concurrency 2
                   and 4: wall time, tasks/s, resolved

``--save`` writes the p50 figures as JSON; ``--baseline`` puts an earlier run's figures (such a file) beside
this run's, with the ratio. On a shared, loaded machine separate runs are not comparable: ``--ab CHECKOUT``
instead alternates, for ``--rounds`` rounds, oracle episodes on the first ``--ab-tasks`` tasks of the first
suite under another checkout of envgym (``git worktree add /tmp/before <commit>``; same venv, its packages
first on ``PYTHONPATH``) and under this one, and prints both p50s side by side (episode start: the reset of
each next episode in the same env; grading: the submit step)::

    python benchmarks/swe_latency.py --suite swe-toolz --ab /tmp/before --rounds 3 --ab-tasks 10

Without --suite it uses every bundled ``tasks/swe-*`` suite plus the local demo repository
(``envgym_swe.demo``). Needs a running engine (sandboxes/host-setup.sh); bundled suites' repositories are
rebuilt from their sdists when this machine has not imported them.
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
from envgym.agents.baseline import OracleAgent, OracleFactory
from envgym.rollout import run_episode
from envgym.task import TaskSpec, list_suites, load_suite, write_tasks
from envgym.types import Action
from envgym.vector.pool import EpisodePool
from envgym_swe import containers
from envgym_swe.cli import _repo_for
from envgym_swe.demo import REPO, make_demo
from envgym_swe.env import SweEnv
from envgym_swe.images import ImageSpec, ensure_image
from envgym_swe.importer import import_instances


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    for line in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))


def build_times(suites: dict[str, list[TaskSpec]], repos: dict[str, Path]) -> list[tuple]:
    rows = []
    seen: set[str] = set()
    for name, tasks in suites.items():
        spec = ImageSpec.model_validate(tasks[0].initial_state["image"])
        if spec.model_dump_json() in seen:
            continue
        seen.add(spec.model_dump_json())
        repo = _repo_for(spec.repo, [t for t in tasks if t.initial_state["image"] == tasks[0].initial_state["image"]],
                         repos)
        t0 = time.perf_counter()
        ensure_image(spec, repo, force=True, nocache=True)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, built = ensure_image(spec, repo)
        cached = time.perf_counter() - t0
        rows.append((name, spec.repo, f"{first:.1f}", f"{cached:.2f}", "no" if not built else "REBUILT"))
    return rows


async def start_times(task: TaskSpec, n: int) -> dict[str, list[float]]:
    cold, warm, reused, fill = [], [], [], []
    for _ in range(max(1, n // 3)):  # a cold pool each time: the env is the pool's only user
        env = SweEnv()
        t0 = time.perf_counter()
        await env.reset(task=task)
        cold.append(time.perf_counter() - t0)
        await env.close()
    keeper = SweEnv()  # holds the pool open and warm
    await keeper.reset(task=task)
    try:
        for _ in range(n):
            await asyncio.sleep(1.5)  # let the pool refill its spares
            env = SweEnv()
            t0 = time.perf_counter()
            await env.reset(task=task)
            warm.append(time.perf_counter() - t0)
            await env.close()
        env = SweEnv()
        await env.reset(task=task)
        for _ in range(n):
            await env.step(Action.call("submit"))  # graded: the episode's container is given back
            await asyncio.sleep(1.5)
            t0 = time.perf_counter()
            await env.reset(task=task)
            reused.append(time.perf_counter() - t0)
        await env.close()
        image = keeper.image or ""
        for _ in range(n):  # what a container start pays to fill /testbed (tmpfs) from the pristine copy
            async with containers.leased(image) as sb:
                t0 = time.perf_counter()
                await sb.session.exec(["sh", "-c", f"mkdir /tmp/fill && cp -a {containers.PRISTINE}/. /tmp/fill/"])
                fill.append(time.perf_counter() - t0)
    finally:
        await keeper.close()
    return {"cold pool (container start)": cold, "warm pool, new env": warm, "same env, next episode": reused,
            "fill /testbed tmpfs (cp -a)": fill}


async def grading_times(suites: dict[str, list[TaskSpec]]) -> dict[str, list[float]]:
    rows = {}
    for name, tasks in suites.items():
        times, resolved = [], 0
        async with envgym.make(tasks[0].env_id) as env:  # graded by make's Grading wrapper, inside the last step
            for task in tasks:
                trajectory = await run_episode(env, OracleAgent(task), task)
                times.append(trajectory.steps[-1].env_s)
                resolved += trajectory.reward == 1.0
        rows[name] = times
        print(f"  {name}: resolved {resolved}/{len(tasks)}")
    return rows


async def suite_run(tasks: list[TaskSpec], concurrency: int) -> tuple:
    t0 = time.perf_counter()
    resolved = infra = 0
    async with EpisodePool(OracleFactory(), concurrency=concurrency) as pool:
        async for trajectory in pool.run(tasks):
            resolved += trajectory.reward == 1.0
            infra += trajectory.outcome.value == "infra_error"
    wall = time.perf_counter() - t0
    return (concurrency, len(tasks), f"{wall:.1f}", f"{len(tasks) / wall:.2f}", f"{resolved}/{len(tasks)}", infra)


EPISODES = """
import asyncio, json, sys
from envgym.agents.baseline import OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.compose import make

async def main():
    out = {"grade": [], "reset": []}
    tasks = load_suite(sys.argv[1])[: int(sys.argv[2])]
    env = make(tasks[0].env_id)  # graded inside the last step by make's wrappers, in either checkout
    try:
        for task in tasks:
            tr = await run_episode(env, OracleAgent(task), task)
            out["grade"].append(tr.steps[-1].env_s)
            out["reset"].append(tr.timing.env_s - sum(s.env_s for s in tr.steps))
    finally:
        await env.close()
    print(json.dumps(out))

asyncio.run(main())
"""
"""Oracle episodes of one suite in one env (only API both checkouts have): grading and reset seconds, as JSON."""


def ab(suite: str, before: Path, rounds: int, n: int) -> None:
    runs: dict[str, dict[str, list[float]]] = {"before": {"grade": [], "reset": []}, "now": {"grade": [], "reset": []}}
    here = Path(__file__).resolve().parents[1]
    for _ in range(rounds):
        for name, root in (("before", before.resolve()), ("now", here)):
            env = {**os.environ, "PYTHONPATH": f"{root}:{root / 'environments' / 'swe'}"}
            proc = subprocess.run([sys.executable, "-c", EPISODES, suite, str(n)], cwd=root, env=env,
                                  capture_output=True, text=True, check=True)
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[name]["grade"] += got["grade"]
            runs[name]["reset"] += got["reset"][1:]  # the first reset of a process starts its pool (cold)
    rows = []
    for what, key, unit, scale in (("episode start (next episode, same env)", "reset", "ms", 1000),
                                   ("grading (submit step)", "grade", "s", 1)):
        b, now = p50(runs["before"][key]) * scale, p50(runs["now"][key]) * scale
        digits = 0 if scale > 1 else 2
        rows.append((what, unit, f"{b:.{digits}f}", f"{now:.{digits}f}", f"{now / b:.2f}x", len(runs["now"][key])))
    table(f"A/B, alternating {rounds} rounds of {n} oracle episodes of {suite} (p50; before = {before})",
          ("measure", "unit", "before", "now", "now/before", "n"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", default=[], help="suite (default: every swe-* plus the demo)")
    parser.add_argument("--starts", type=int, default=9)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--skip-build", action="store_true", help="skip the image build measurements")
    parser.add_argument("--save", help="write this run's p50 figures (JSON)")
    parser.add_argument("--baseline", help="an earlier run's --save file, shown beside this run")
    parser.add_argument("--ab", type=Path, help="another envgym checkout: alternate its episodes with this one's")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ab-tasks", type=int, default=10)
    args = parser.parse_args()
    if args.ab:
        ab((args.suite or ["swe-toolz"])[0], args.ab, args.rounds, args.ab_tasks)
        return
    tmp = tempfile.TemporaryDirectory(prefix="swe-bench-")
    repo, instances = make_demo(tmp.name)
    demo = import_instances([i for i in instances if "hang" not in i["instance_id"]], {REPO: repo}, "swe-demo", None,
                            remember=False)
    demo_dir = Path(tmp.name) / "swe-demo"
    demo_dir.mkdir()
    write_tasks(demo_dir / "tasks.jsonl", demo.tasks)
    envgym.register("swe/demo-v1", "envgym_swe.env:SweEnv", suites=(str(demo_dir),), override=True)
    names = args.suite or [s for s in list_suites() if s.startswith("swe-")]
    suites = {name: load_suite(name) for name in names}
    suites = {k: v for k, v in suites.items() if v}
    suites["swe-demo (local)"] = demo.tasks
    print(f"suites: {', '.join(f'{k} ({len(v)})' for k, v in suites.items())}")
    if not args.skip_build:
        table("image build per repository (seconds)", ("suite", "repo", "first", "cached", "rebuilt on 2nd?"),
              build_times(suites, {REPO: repo}))
    first = next(iter(suites.values()))[0]
    baseline = json.loads(Path(args.baseline).read_text()) if args.baseline else {}
    figures: dict[str, float] = {}

    def compare(title: str, unit: str, scale: float, samples: dict[str, list[float]]) -> None:
        rows = []
        for name, values in samples.items():
            key = f"{title}: {name}"
            figures[key] = p50(values) * scale
            before = baseline.get(key)
            rows.append((name, f"{figures[key]:.{0 if scale > 1 else 2}f}", len(values),
                         "-" if before is None else f"{before:.{0 if scale > 1 else 2}f}",
                         "-" if not before else f"{figures[key] / before:.2f}x"))
        table(f"{title} (p50, {unit})", ("source", "now", "n", "baseline", "now/baseline"), rows)

    compare(f"episode start: env.reset() ({first.id})", "ms", 1000, asyncio.run(start_times(first, args.starts)))
    compare("grading: the submit step of an oracle episode", "s", 1, asyncio.run(grading_times(suites)))
    if args.save:
        Path(args.save).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    bundled = [t for name, tasks in suites.items() if name != "swe-demo (local)" for t in tasks] or demo.tasks
    table(f"whole bundled suite{'s' if len(suites) > 2 else ''} through the oracle (EpisodePool)",
          ("concurrency", "tasks", "wall s", "tasks/s", "resolved", "infra errors"),
          [asyncio.run(suite_run(bundled, c)) for c in args.concurrency])
    tmp.cleanup()


if __name__ == "__main__":
    main()
