"""The tool env's cost per step and per episode, each figure compared like with like.

Part 1, per step: the read calls of the suite's reference solutions, three ways on the same kind of store
(an in-memory copy of the task's template, the env's default; ``--on-disk`` adds the same on a file):

  direct   the tool function on a SQLite connection (arguments validated by its pydantic model)
  execute  envgym.tools.execute_calls in the calling thread (JSON parsing, validation, transactions,
           call records): the env's work without the event loop
  env      `await env.step(Action(...))` through the wrappers `envgym.make` adds

Part 2, per episode: oracle episodes of every task of each tool suite, in one process, one env, after a
warm-up pass (templates and expected states are cached per task, so this is the steady state RL sees). Per
stage: ``reset``; ``steps`` (the reference's tool calls); ``final`` (the closing message, graded by the
kernel's Grading wrapper); and grading apart, on the ended episode: ``context`` (verify_context), ``grade``
(the verifiers, incremental: only tables the episode or the reference changed are read) and ``grade
whole`` (the same verifiers on views that cannot say what changed: every table read, sorted and diffed,
as before incremental grading). ``episodes/s`` is a whole loop of oracle episodes. Rows whose store is
``file`` run the env with ``on_disk=True``: a temporary directory and file per episode, a worker-thread
hop, as every episode did before in-memory stores. The script also runs on a checkout from before that
change (``PYTHONPATH=<old checkout>:<old checkout>/environments/tool``), where every row is a file row.

Every figure is the median of ``--runs`` (>= 3) runs, printed with the load average. Part 1's target:
<= 1 ms of kernel overhead per step.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import envgym
from envgym.tools import ToolContext, ToolEnv, execute_calls, load_domain, store
from envgym.types import Action
from envgym.verify import grade

SUITES = ("retail", "assistant", "telecom", "codes")
ON_DISK = "on_disk" in inspect.signature(ToolEnv.__init__).parameters  # False on a checkout from before it
# (store kind, the direct call's store path, the env's keyword arguments); a checkout without on_disk always
# keeps its store in a file, so its default row is a file row on both sides.
DEFAULT = ("memory", ":memory:", {}) if ON_DISK else ("file", "store.sqlite", {})
FILE = ("file", "store.sqlite", {"on_disk": True})


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def median_of(runs: int, sample) -> float:
    return statistics.median(sample() for _ in range(runs))


# --- part 1: per step ------------------------------------------------------------------------------------

def read_call(suite: str, domain):
    for task in envgym.load_suite(suite):
        for action in task.solution or ():
            for call in action.tool_calls:
                if domain.by_name[call.name].kind == "read":
                    return task, call
    return None, None


def per_call_us(fn, n: int, runs: int) -> float:
    def sample() -> float:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n * 1e6
    return median_of(runs, sample)


async def env_step_us(env_id: str, task, call, n: int, runs: int, **kwargs) -> float:
    action = Action(tool_calls=(call,))
    long = task.model_copy(update={"limits": task.limits.model_copy(update={"max_steps": n + 10})})
    samples = []
    async with envgym.make(env_id, **kwargs) as env:
        for _ in range(runs):
            await env.reset(task=long)
            start = time.perf_counter()
            for _ in range(n):
                await env.step(action)
            samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def part_one(suites: list[str], n: int, runs: int, on_disk: bool) -> None:
    print(f"\nper step, microseconds (median of {runs} runs of {n} calls)")
    print(f"{'env':<20} {'store':<7} {'tool':<24} {'direct':>8} {'execute':>8} {'env.step':>9} "
          f"{'overhead':>9} {'ratio':>6} {'target':>11}  load")
    for name in suites:
        domain = load_domain(f"envgym_tool.domains.{name}:DOMAIN")
        task, call = read_call(f"tool-{name}", domain)
        if task is None:
            continue
        tool = domain.by_name[call.name]
        raw = json.loads(call.arguments)
        for kind, path, kwargs in [DEFAULT, FILE] if on_disk else [DEFAULT]:
            with tempfile.TemporaryDirectory() as tmp:
                where = path if path == ":memory:" else Path(tmp) / path
                conn = store.create(where, domain.schema_sql, task.initial_state)
                try:
                    def direct_call(tool=tool, conn=conn, raw=raw):
                        return tool.fn(ToolContext(conn=conn), tool.args_model.model_validate(raw))

                    def execute(domain=domain, conn=conn, call=call):
                        return execute_calls(domain, conn, [], (call,))

                    direct, executed = per_call_us(direct_call, n, runs), per_call_us(execute, n, runs)
                finally:
                    conn.close()
            stepped = asyncio.run(env_step_us(f"tool/{name}-v1", task, call, n, runs, **kwargs))
            overhead = stepped - direct
            verdict = "<=1000 " + ("ok" if overhead <= 1000 else "MISSED")
            print(f"{f'tool/{name}-v1':<20} {kind:<7} {call.name:<24} {direct:>8.1f} {executed:>8.1f} {stepped:>9.1f} "
                  f"{overhead:>9.1f} {stepped / direct:>6.1f} {verdict:>11}  {load()}")


# --- part 2: per episode ---------------------------------------------------------------------------------

class WholeStore:
    """A state view that cannot say which tables changed: grading reads and diffs every table."""

    def __init__(self, view) -> None:
        self.view = view

    def snapshot(self):
        return self.view.snapshot()

    def columns(self):
        return self.view.columns()

    def query(self, sql):
        return self.view.query(sql)


STAGES = ("reset", "steps", "final", "context", "grade", "grade whole")


async def episode_pass(env, tasks) -> dict[str, float]:
    """One oracle episode per task; seconds spent per stage, summed."""
    spent = dict.fromkeys((*STAGES, "loop"), 0.0)
    for task in tasks:
        t0 = time.perf_counter()
        await env.reset(task=task)
        t1 = time.perf_counter()
        for action in task.solution[:-1]:
            await env.step(action)
        t2 = time.perf_counter()
        result = await env.step(task.solution[-1])
        t3 = time.perf_counter()
        if not result.info["verdict"].passed:
            raise SystemExit(f"the oracle failed {task.id}: {result.info['verdict']}")
        spent["loop"] += t3 - t0
        ctx = await env.unwrapped.verify_context()
        t4 = time.perf_counter()
        verdict = await grade(task, ctx)
        t5 = time.perf_counter()
        ctx = await env.unwrapped.verify_context()
        ctx.state = WholeStore(ctx.state)
        ctx.expected_state = WholeStore(ctx.expected_state) if ctx.expected_state is not None else None
        t6 = time.perf_counter()
        whole = await grade(task, ctx)
        t7 = time.perf_counter()
        if whole != verdict:
            raise SystemExit(f"{task.id}: incremental and whole-store grading differ")
        for stage, took in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t7 - t6), strict=True):
            spent[stage] += took
    return spent


async def per_episode(env_id: str, tasks, runs: int, **kwargs) -> tuple[dict[str, float], float]:
    async with envgym.make(env_id, **kwargs) as env:
        await episode_pass(env, tasks)  # warm-up: templates and expected states built once per task
        passes = [await episode_pass(env, tasks) for _ in range(runs)]
    ms = {stage: statistics.median(p[stage] for p in passes) / len(tasks) * 1e3 for stage in STAGES}
    rate = statistics.median(len(tasks) / p["loop"] for p in passes)
    return ms, rate


def part_two(suites: list[str], runs: int, repeat: int, on_disk: bool) -> None:
    print(f"\nper oracle episode, milliseconds (median of {runs} runs, each every task x{repeat}, warm caches)")
    print(f"{'env':<20} {'store':<7} {'eps':>4} " + " ".join(f"{s:>11}" for s in STAGES) + f" {'episodes/s':>11}  load")
    for name in suites:
        tasks = [t for t in envgym.load_suite(f"tool-{name}") if t.solution] * repeat
        for kind, _, kwargs in [DEFAULT, FILE] if on_disk else [DEFAULT]:
            ms, rate = asyncio.run(per_episode(f"tool/{name}-v1", tasks, runs, **kwargs))
            print(f"{f'tool/{name}-v1':<20} {kind:<7} {len(tasks):>4} " + " ".join(f"{ms[s]:>11.3f}" for s in STAGES)
                  + f" {rate:>11.0f}  {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="calls per sample in part 1")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median; at least 3)")
    parser.add_argument("--repeat", type=int, default=3, help="passes over a suite's tasks per run in part 2")
    parser.add_argument("--on-disk", action="store_true", help="also time a file store per episode")
    parser.add_argument("--part", choices=("1", "2", "both"), default="both")
    parser.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES), help="tool domains to time")
    args = parser.parse_args()
    if args.runs < 3:
        parser.error("--runs must be at least 3")
    on_disk = args.on_disk and ON_DISK  # a checkout without the option times its file store only
    print(f"load average at start: {load()}")
    if args.part in ("1", "both"):
        part_one(args.suites, args.n, args.runs, on_disk)
    if args.part in ("2", "both"):
        part_two(args.suites, args.runs, args.repeat, on_disk)


if __name__ == "__main__":
    main()
