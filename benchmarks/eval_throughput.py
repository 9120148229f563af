"""Oracle episodes/s through `envgym eval` on the tool suites, against the limit set by the tool calls alone.

Each measurement is one `envgym.eval.evaluate` (the code path of `envgym eval`: task loading, the pool,
one env per slot, the oracle's steps, grading, group-committed records and trajectories, the exporters)
into a fresh run directory, in a fresh process as `envgym eval` runs (its imports not timed; the envs'
per-task caches start empty, as in every real run; the run's progress kept, with no `on_record` hook, as
`envgym eval` runs it: until 2026-12-03 the benchmark timed records through `on_record`, which has every
worker's record line parsed back), at concurrency 1 and 32 and with 1 and 2 worker
processes. With workers, the fork server they start from is started before the measuring process's imports,
as `envgym eval` starts it (`--late-fork-server`: as `evaluate` begins, where both started it until 2026-12-03).
The configurations are measured in turn, `--repeat` rounds, and each row reports the median with the 1-minute
load average at each of its runs. `steady/s` leaves out each run's start (worker
processes starting, caches filling): episodes between the 10% and the last record over the time between;
`first (s)` is the time to the first record.

Before measuring, the project's packages are compiled to byte code, as an installed envgym is (pip compiles a
wheel's modules, and `make` its editable install's): where PYTHONDONTWRITEBYTECODE is set, as on these machines, a
checkout's modules were otherwise compiled again in every measured process, ~0.1 s of each run's start (until
2026-12-03, when `first (s)` fell from 0.36-0.39 to 0.23-0.31 in 3 and 4 runs).

The limit is measured in the same process on the same tasks and runs: the oracle's tool calls alone,
each tool function called on an in-memory store holding the task's initial state (arguments validated
by the tool's model, each call in a savepoint and recorded for the next, as the env does), nothing else timed: no
reset, rollout, grading or records. The fraction of the limit is eval episodes/s over limit episodes/s.

A line after the table gives the same two ratios within each round (its c=32 and c=1 runs, its limit), and their
median: this host's speed drifts by tens of percent from one minute to the next, and a ratio of two medians
taken over the whole benchmark measures that drift too.

Targets (issue 19): >= 1,500 episodes/s on 2 cores, >= 20% of the limit, c=32 >= 1.6x c=1. The last compares
c=32 as run with the better of 1 and 2 worker processes: it asks whether concurrency puts the machine's cores
to work, and one process under the GIL can beat c=1 only by the time c=1 leaves its loop idle (waiting on a
thread), which the tool env no longer does. (Until 2026-12 it compared one process's c=32 with c=1.)
"""

from __future__ import annotations

import sys


def _fork_server_first() -> None:
    """``envgym eval --workers N`` starts its workers' fork server before its own imports (envgym._forkserver); a
    measurement with workers does the same, here, before this script's imports (``--late-fork-server``: not)."""
    if __name__ == "__main__" and "--one" in sys.argv and "--late-fork-server" not in sys.argv:  # not in a worker
        concurrency, workers = map(int, sys.argv[sys.argv.index("--one") + 1].split(","))
        if concurrency > 1 and workers > 1:
            from envgym._forkserver import start

            start(SUITES)


SUITES = ("tool-retail", "tool-assistant")
_fork_server_first()

import argparse  # noqa: E402  (after the fork server's start, as in envgym eval)
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from envgym._progress import RunProgress  # noqa: E402
from envgym.agents import OracleConfig  # noqa: E402
from envgym.eval import EvalConfig, evaluate, plan  # noqa: E402
from envgym.tools import ToolContext, ToolFailure, load_domain, store  # noqa: E402
from envgym.types import Outcome  # noqa: E402
from envgym.verify.context import CallRecord  # noqa: E402

PACKAGES = ("envgym", "envgym_tool", "envgym_timed", "envgym_web", "envgym_swe", "envgym_mcp", "envgym_bfcl",
            "envgym_gui", "envgym_textgames", "envgym_tasks", "envgym_verifiers", "envgym_leaderboard")
"""What `envgym eval` may import: envgym, the bundled families (each run loads every registered one), their data."""
CONFIGS = ((1, 1), (32, 1), (32, 2))
"""(concurrency, workers) measured."""


def load() -> float:
    return os.getloadavg()[0]


async def one_run(config: EvalConfig, concurrency: int, workers: int) -> tuple[int, float, float, float]:
    """Episodes, their rate over the whole call, the steady rate (10% to the last record) and the seconds to
    the first record (the run's start: planning, workers starting, the first episodes' per-task caches)."""
    stamps: list[float] = []

    class Stamped(RunProgress):  # what envgym eval keeps up to date (it passes no on_record, which parses records)
        def counted(self, suite: str, outcome: Outcome, cause: str | None = None) -> None:
            stamps.append(time.perf_counter())
            super().counted(suite, outcome, cause)

    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = await evaluate(config, out, concurrency=concurrency, workers=workers, progress=Stamped())
        elapsed = time.perf_counter() - start
    if summary.outcomes.get("success", 0) != summary.ran:
        raise SystemExit(f"oracle did not pass every episode: {dict(summary.outcomes)}")
    first = len(stamps) // 10
    steady = (len(stamps) - 1 - first) / (stamps[-1] - stamps[first])
    return summary.ran, summary.ran / elapsed, steady, stamps[0] - start


def tool_call_limit(config: EvalConfig) -> float:
    """Episodes/s if an episode cost only its reference solution's tool calls."""
    domains = {}
    busy, episodes = 0.0, 0
    for _, task in plan(config):
        family = task.env_id.split("/")[1].rsplit("-v", 1)[0]
        domain = domains.get(family) or domains.setdefault(family, load_domain(f"envgym_tool.domains.{family}:DOMAIN"))
        calls = [(domain.by_name[c.name], json.loads(c.arguments)) for a in task.solution or () for c in a.tool_calls]
        conn = store.create(":memory:", domain.schema_sql, task.initial_state)
        for _ in range(config.runs):
            conn.execute("BEGIN")
            begin = time.perf_counter()
            made: list[CallRecord] = []  # the calls so far, as the env keeps them (retail's policy reads them)
            for tool, raw in calls:
                args = tool.args_model.model_validate(raw)
                conn.execute("SAVEPOINT call")  # each call all or nothing, as in the env
                try:
                    tool.fn(ToolContext(conn=conn, calls=made), args)
                    ok = True
                except ToolFailure:  # some reference solutions show the agent a refused call
                    conn.execute("ROLLBACK TO call")
                    ok = False
                conn.execute("RELEASE call")
                made.append(CallRecord(index=len(made), name=tool.name, kind=tool.kind,
                                       arguments=args.model_dump(mode="json"), ok=ok))
            busy += time.perf_counter() - begin
            conn.execute("ROLLBACK")  # the next run starts from the initial state again
            episodes += 1
        conn.close()
    return episodes / busy


def compile_packages() -> None:
    """Byte code for the project's packages (see the module docstring); what is current is left as it is."""
    import compileall
    import importlib.util

    for name in PACKAGES:
        found = importlib.util.find_spec(name)
        for folder in (found.submodule_search_locations or []) if found else []:
            compileall.compile_dir(folder, quiet=2, workers=0)


def measure(concurrency: int, workers: int, runs: int, late: bool) -> tuple[int, float, float, float]:
    """One measurement in a fresh process (see the module docstring)."""
    out = subprocess.run([sys.executable, __file__, "--one", f"{concurrency},{workers}", "--runs", str(runs),
                          *(["--late-fork-server"] if late else [])], check=True, capture_output=True, text=True).stdout
    episodes, rate, steady, first = json.loads(out.splitlines()[-1])
    return episodes, rate, steady, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="episodes per task (K); 77 tasks")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each configuration (the median is shown)")
    parser.add_argument("--one", metavar="C,W", help=argparse.SUPPRESS)  # one measurement, printed as JSON
    parser.add_argument("--late-fork-server", action="store_true",
                        help="start the workers' fork server as evaluate() begins, not before the imports as "
                             "envgym eval does (what the benchmark measured before 2026-12-03)")
    args = parser.parse_args()
    config = EvalConfig(suites=SUITES, split=None, agent=OracleConfig(), runs=args.runs)
    if args.one:
        concurrency, workers = map(int, args.one.split(","))
        print(json.dumps(asyncio.run(one_run(config, concurrency, workers))))
        return
    compile_packages()
    samples: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {c: [] for c in CONFIGS}
    limits: list[tuple[float, float]] = []
    episodes = 0
    for _ in range(args.repeat):  # in turn, so a change in the host's load reaches every configuration
        limits.append((tool_call_limit(config), load()))
        for concurrency, workers in CONFIGS:
            episodes, rate, steady, first = measure(concurrency, workers, args.runs, args.late_fork_server)
            samples[(concurrency, workers)].append((rate, steady, first, load()))
    limit = statistics.median(x for x, _ in limits)
    print(f"{episodes} episodes per run ({len(plan(config))} tasks x {args.runs}), median of {args.repeat} runs; "
          f"{os.cpu_count()} CPUs")
    print(f"tool-call limit: {limit:,.0f} episodes/s (load {', '.join(f'{x:.1f}' for _, x in limits)})")
    base = statistics.median(r for r, *_ in samples[CONFIGS[0]])
    print(f"{'concurrency':>11} {'workers':>7} {'episodes/s':>10} {'steady/s':>9} {'first (s)':>9} {'vs c=1':>7} "
          f"{'of limit':>8}  {'load (1 min) at each run':<24}")
    for (concurrency, workers), rows in samples.items():
        rate = statistics.median(r for r, *_ in rows)
        steady = statistics.median(s for _, s, *_ in rows)
        first = statistics.median(f for _, _, f, _ in rows)
        loads = ", ".join(f"{x:.1f}" for *_, x in rows)
        print(f"{concurrency:>11} {workers:>7} {rate:>10,.0f} {steady:>9,.0f} {first:>9.2f} {rate / base:>7.2f} "
              f"{rate / limit:>8.1%}  {loads:<24}")
    best = max(statistics.median(r for r, *_ in rows) for rows in samples.values())
    c32, w32 = max((statistics.median(r for r, *_ in rows), w) for (c, w), rows in samples.items() if c == 32)
    # the same ratios within each round (runs a minute apart), then their median: the host's speed drifts by tens
    # of percent between minutes, which a ratio of two medians taken over the whole benchmark also measures
    best_config = max(samples, key=lambda k: statistics.median(r for r, *_ in samples[k]))
    speedups = [a[0] / b[0] for a, b in zip(samples[(32, w32)], samples[CONFIGS[0]], strict=True)]
    fractions = [a[0] / x for a, (x, _) in zip(samples[best_config], limits, strict=True)]
    print(f"within each round: c=32 ({w32} worker{'s' if w32 > 1 else ''}) / c=1 = "
          f"{', '.join(f'{x:.2f}' for x in speedups)} (median {statistics.median(speedups):.2f}x); "
          f"of that round's limit = {', '.join(f'{x:.1%}' for x in fractions)} "
          f"(median {statistics.median(fractions):.1%})")
    print(f"targets: >= 1,500 episodes/s: {'ok' if best >= 1500 else 'MISSED'} ({best:,.0f}); >= 20% of the limit: "
          f"{'ok' if best / limit >= 0.2 else 'MISSED'} ({best / limit:.1%}); c=32 >= 1.6x c=1 "
          f"({w32} worker{'s' if w32 > 1 else ''}): {'ok' if c32 / base >= 1.6 else 'MISSED'} ({c32 / base:.2f}x)")


if __name__ == "__main__":
    main()
