"""What task generators cost and give, side by side: one row per registered generator (``envgym.list_generators()``).

For each generator, on the first ``--n`` seeds of its train split (levels mixed, seed ``s`` at
``levels[s % len(levels)]``; fewer when ``--budget-s`` seconds of generation run out first), in this process:

- **distinct**: tasks distinct by normalised content and by reference solution (``envgym.generate.distinct``),
  and ``distinct / n``;
- **tasks/s**: generation throughput (wall time of making the ``n`` tasks, one process, one core), and its
  ratio to the slowest generator of the run; **first task s**: the first task's seconds, which hold the
  process's warm-up (imports, ScienceWorld's JVM), and **tasks/s after it** (what the process then sustains:
  under a short ``--budget-s`` a slow-starting generator's tasks/s is mostly its warm-up);
- **ref actions per level**: the mean length of the reference solutions (actions the oracle plays) per level;
- **data on disk**: what a generated suite ships instead of tasks: bytes of ``tasks/NAME/`` when there is one
  (materialised instances, e.g. SWE), else 0 (made on demand); beside it the env's hand-written suites
  (tasks and bytes of their JSONL) and the ratio of distinct generated tasks (over ``n``, a lower bound) to them.

With ``--eval``: oracle, null and random solve rates on the first ``--eval-n`` seeds of the test split,
through ``envgym eval`` (one run per agent, in a temporary folder), and the random agent's rate per level.

    python benchmarks/generators.py                       # every generator, n = 200
    python benchmarks/generators.py --n 1000 --only tool-retail-gen web-shop-gen
    python benchmarks/generators.py --eval --eval-n 30     # + oracle / null / random solve rates
    python benchmarks/generators.py --levels-eval hf random --per-level 5 --eval-out runs/levels \
        --only tool-retail-gen web-shop-gen                # agents' solve rate per level, and the leaderboard

With ``--levels-eval AGENT ...``: each agent on the first ``--per-level`` test seeds of every level (one
``envgym eval`` run per generator and agent over ``NAME@0:LEVELS*N:split=test``, seed ``s`` at level
``levels[s % len(levels)]``, at ``--eval-concurrency``), kept in ``--eval-out`` (a rerun resumes each run),
then ``envgym leaderboard build`` over them into ``EVAL_OUT/leaderboard`` (the page plots solve rate per level
per agent) and a table agent x generator x level (instead of the distinct/speed table).

Not part of ``make test``: it prints tables, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from envgym import registry
from envgym.generate import distinct, find, generate, parse_task_id

ROOT = Path(__file__).resolve().parent.parent


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def hand_written(env_id: str) -> tuple[int, int]:
    """Tasks and JSONL bytes of the env's registered (shipped) suites."""
    tasks = size = 0
    for name in registry.spec(env_id).suites:
        suite = registry.suite_spec(name)
        if suite is None or suite.user:
            continue
        path = Path(suite.path)
        for file in ([path] if path.is_file() else sorted(path.glob("*.jsonl"))):
            tasks += sum(1 for line in file.read_text(encoding="utf-8").splitlines() if line.strip())
            size += file.stat().st_size
    return tasks, size


def measure(name: str, n: int, budget_s: float) -> dict:
    spec = find(name)
    split = spec.splits[0]
    started = time.perf_counter()
    tasks = []
    first = 0.0
    for seed in range(n):  # a slow generator (a game compiled per task) stops at the budget: n is what was made
        tasks.append(generate(name, seed, split=split))
        first = first or time.perf_counter() - started
        if time.perf_counter() - started > budget_s:
            break
    seconds = time.perf_counter() - started
    n = len(tasks)
    counted = distinct(tasks)
    lengths: dict[int, list[int]] = defaultdict(list)
    for task in tasks:
        lengths[parse_task_id(task.id)[2]].append(len(task.solution or ()))
    written, written_bytes = hand_written(spec.env_id)
    return {"name": name, "family": spec.family, "levels": spec.levels, "n": n, "distinct": counted.distinct,
            "tasks_per_s": n / seconds if seconds else float("inf"), "first_s": first,
            "warm_per_s": (n - 1) / (seconds - first) if n > 1 and seconds > first else None,
            "ref": {level: sum(v) / len(v) for level, v in sorted(lengths.items())},
            "data_bytes": _bytes(ROOT / "tasks" / name), "hand_tasks": written, "hand_bytes": written_bytes}


def evaluate(name: str, n: int, agent: str, out: Path, concurrency: int = 2) -> tuple[float | None, dict[int, float]]:
    """The agent's solve rate on the first ``n`` test seeds (and per level), through ``envgym eval``."""
    suite = f"{name}@0:{n}:split=test" if "test" in find(name).splits else f"{name}@0:{n}"
    run = out / f"{name}-{agent}"
    cli = Path(sys.executable).parent / "envgym"  # the console script of this interpreter's environment
    # eval's default concurrency (8 desktops on 2 cores) measures the host's load, not the generator
    subprocess.run([str(cli), "eval", "--suite", suite, "--agent", agent, "--out", str(run), "--quiet",
                    "--concurrency", str(concurrency)], check=False,
                   capture_output=True, text=True)
    records = run / "records.jsonl"
    if not records.is_file():
        return None, {}
    latest = {}
    for line in records.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            latest[(record["task_hash"], record["run_index"])] = record
    graded = [r for r in latest.values() if r["outcome"] != "infra_error"]
    per_level: dict[int, list[bool]] = defaultdict(list)
    for record in graded:
        per_level[parse_task_id(record["task_id"])[2]].append(record["outcome"] == "success")
    rate = sum(r["outcome"] == "success" for r in graded) / len(graded) if graded else None
    return rate, {level: sum(v) / len(v) for level, v in sorted(per_level.items())}


def level_runs(name: str, agents: list[str], per_level: int, out: Path, concurrency: int,
               extra: list[str]) -> dict[str, dict[int, tuple[int, int]]]:
    """Each agent's (successes, graded episodes) per level on ``per_level`` test seeds of every level of
    generator ``name``: one ``envgym eval`` run per agent into ``out/NAME-AGENT`` (resumed when rerun)."""
    spec = find(name)
    split = "test" if "test" in spec.splits else spec.splits[0]
    suite = f"{name}@0:{per_level * len(spec.levels)}:split={split}"
    cli = Path(sys.executable).parent / "envgym"
    table: dict[str, dict[int, tuple[int, int]]] = {}
    for agent in agents:
        run = out / f"{name}-{agent.replace(':', '_')}"
        started = time.perf_counter()
        done = subprocess.run([str(cli), "eval", "--suite", suite, "--agent", agent, "--out", str(run), "--quiet",
                               "--concurrency", str(concurrency), *extra], check=False, capture_output=True, text=True)
        print(f"{name} {agent}: exit {done.returncode}, {time.perf_counter() - started:.0f} s "
              f"{done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]}",
              file=sys.stderr, flush=True)
        cells: dict[int, list[bool]] = defaultdict(list)
        records = run / "records.jsonl"
        latest = {}
        for line in records.read_text(encoding="utf-8").splitlines() if records.is_file() else ():
            if line.strip():
                record = json.loads(line)
                latest[(record["task_hash"], record["run_index"])] = record
        for record in latest.values():
            if record["outcome"] != "infra_error":
                cells[parse_task_id(record["task_id"])[2]].append(record["outcome"] == "success")
        table[agent] = {level: (sum(v), len(v)) for level, v in sorted(cells.items())}
    return table


def _kb(size: int) -> str:
    return "0 (on demand)" if not size else f"{size / 1024:,.0f} KiB"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="seeds per generator for distinct, speed, lengths")
    parser.add_argument("--budget-s", type=float, default=60.0,
                        help="stop a generator after this many seconds of generation (its row says how many it made)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these generators only")
    parser.add_argument("--eval", action="store_true", help="also oracle / null / random solve rates")
    parser.add_argument("--eval-n", type=int, default=30, help="test seeds per agent with --eval")
    parser.add_argument("--eval-concurrency", type=int, default=2, help="episodes at once in each --eval run")
    parser.add_argument("--levels-eval", nargs="+", metavar="AGENT",
                        help="these agents' solve rate per level (envgym eval agents: hf, random, ...)")
    parser.add_argument("--per-level", type=int, default=5, help="test seeds per level with --levels-eval")
    parser.add_argument("--eval-out", type=Path, help="where --levels-eval keeps its runs and leaderboard")
    parser.add_argument("--eval-arg", action="append", default=[], metavar="ARG",
                        help="one more envgym eval argument for --levels-eval runs (repeatable: --eval-arg=--max-steps "
                             "--eval-arg=12)")
    args = parser.parse_args()
    names = args.only or registry.list_generators()
    if args.levels_eval:
        if args.eval_out is None:
            parser.error("--levels-eval needs --eval-out (its runs are kept there)")
        tables = {name: level_runs(name, args.levels_eval, args.per_level, args.eval_out, args.eval_concurrency,
                                   args.eval_arg) for name in names}
        runs = sorted(str(p) for p in args.eval_out.iterdir() if (p / "records.jsonl").is_file())
        subprocess.run([str(Path(sys.executable).parent / "envgym"), "leaderboard", "build", "--out",
                        str(args.eval_out / "leaderboard"), *runs], check=False)
        print(f"\n## Solve rate per level: {args.per_level} test seeds a level, successes / graded episodes\n")
        levels = sorted({lv for name in names for lv in find(name).levels})
        print("| agent | generator | " + " | ".join(f"level {lv}" for lv in levels) + " |")
        print("|---|---|" + "---:|" * len(levels))
        for agent in args.levels_eval:
            for name, table in tables.items():
                cells = table.get(agent, {})
                print(f"| {agent} | {find(name).family}/{name} | " + " | ".join(
                    f"{cells[lv][0]}/{cells[lv][1]}" if lv in cells else "—" for lv in levels) + " |")
        return
    rows = []
    for name in names:
        try:
            rows.append(measure(name, args.n, args.budget_s))
        except Exception as exc:  # one broken generator is a row saying so, not a lost table
            rows.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
        print(f"measured {name}: " + (rows[-1].get("error") or f"{rows[-1]['n']} tasks, "
                                      f"{rows[-1]['tasks_per_s']:.2f}/s"), file=sys.stderr, flush=True)
    ok = [r for r in rows if "error" not in r]
    slowest = min((r["tasks_per_s"] for r in ok), default=1.0)
    print(f"\n## Generators: first {args.n} train seeds each (fewer where --budget-s {args.budget_s:g} ran out), "
          "levels mixed\n")
    print("| generator | levels | distinct / n | tasks/s | × slowest | first task s | tasks/s after it "
          "| ref actions per level | data on disk | hand-written tasks (bytes) | distinct ÷ hand-written |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['family']}/{r['name']} | error: {r['error'][:80]} |" if "family" in r
                  else f"| {r['name']} | error: {r['error'][:80]} |")
            continue
        ref = " / ".join(f"l{lv} {v:.1f}" for lv, v in r["ref"].items())
        warm = "—" if r["warm_per_s"] is None else f"{r['warm_per_s']:,.2f}"
        ratio = f"{r['distinct'] / r['hand_tasks']:.1f}×" if r["hand_tasks"] else "—"
        print(f"| {r['family']}/{r['name']} | {','.join(map(str, r['levels']))} | {r['distinct']} / {r['n']} "
              f"({r['distinct'] / r['n']:.2f}) | {r['tasks_per_s']:,.2f} | {r['tasks_per_s'] / slowest:,.1f} "
              f"| {r['first_s']:.2f} | {warm} | {ref} "
              f"| {_kb(r['data_bytes'])} | {r['hand_tasks']} ({r['hand_bytes'] / 1024:,.0f} KiB) | {ratio} |")
    if not args.eval:
        return
    print(f"\n## Solve rates: first {args.eval_n} test seeds each, through envgym eval\n")
    print("| generator | oracle | null | random | random per level |")
    print("|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for r in ok:
            rates = {agent: evaluate(r["name"], args.eval_n, agent, Path(tmp), args.eval_concurrency)
                     for agent in ("oracle", "null", "random")}
            per_level = " / ".join(f"l{lv} {_pct(v)}" for lv, v in rates["random"][1].items()) or "—"
            print(f"| {r['family']}/{r['name']} | {_pct(rates['oracle'][0])} | {_pct(rates['null'][0])} "
                  f"| {_pct(rates['random'][0])} | {per_level} |", flush=True)
            print(f"evaluated {r['name']}", file=sys.stderr)


if __name__ == "__main__":
    main()
