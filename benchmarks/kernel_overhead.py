"""Kernel overhead per step on the tool env versus calling the tool functions directly.

For each bundled tool domain, takes the read calls of the suite's reference solutions and runs them
three ways, side by side in one process:

  direct   the tool function on a SQLite connection (arguments validated by its pydantic model)
  execute  envgym.tools.execute_calls in the calling thread (JSON parsing, validation, transactions,
           call records) — the env's work without the event loop
  env      `await env.step(Action(...))` through the wrappers `envgym.make` adds (order enforcing, time
           limit) and the env's observation building

Prints per-step microseconds and the kernel overhead (env - direct). Target: <= 1 ms per step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import envgym
from envgym.tools import ToolContext, execute_calls, load_domain, store
from envgym.types import Action


def read_calls(suite: str, domain):
    tasks = envgym.load_suite(suite)
    for task in tasks:
        for action in task.solution or ():
            for call in action.tool_calls:
                if domain.by_name[call.name].kind == "read":
                    return task, call
    raise SystemExit(f"no read call in the reference solutions of {suite}")


def per_call_us(fn, n: int) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


async def env_us(env_id: str, task, call, n: int) -> float:
    samples = []
    async with envgym.make(env_id) as env:
        action = Action(tool_calls=(call,))
        for _ in range(5):
            task_long = task.model_copy(update={"limits": task.limits.model_copy(update={"max_steps": n + 10})})
            await env.reset(task=task_long)
            start = time.perf_counter()
            for _ in range(n):
                await env.step(action)
            samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="steps per sample")
    args = parser.parse_args()
    rows = []
    for domain_name in ("retail", "assistant"):
        domain = load_domain(f"envgym_tool.domains.{domain_name}:DOMAIN")
        task, call = read_calls(f"tool-{domain_name}", domain)
        tool = domain.by_name[call.name]
        conn = store.create(":memory:", domain.schema_sql, task.initial_state)
        raw = json.loads(call.arguments)
        def direct_call(tool=tool, conn=conn, raw=raw):
            return tool.fn(ToolContext(conn=conn), tool.args_model.model_validate(raw))

        def execute(domain=domain, conn=conn, call=call):
            execute_calls(domain, conn, [], (call,))

        direct = per_call_us(direct_call, args.n)
        executed = per_call_us(execute, args.n)
        stepped = asyncio.run(env_us(f"tool/{domain_name}-v1", task, call, args.n))
        rows.append((f"tool/{domain_name}-v1", call.name, direct, executed, stepped))

    print(f"{'env':<20} {'tool':<24} {'direct us':>10} {'execute us':>11} {'env.step us':>12} "
          f"{'overhead us':>12} {'ratio':>6} {'target':>8}")
    for env_id, name, direct, executed, stepped in rows:
        overhead = stepped - direct
        verdict = "ok" if overhead <= 1000 else "MISSED"
        print(f"{env_id:<20} {name:<24} {direct:>10.1f} {executed:>11.1f} {stepped:>12.1f} {overhead:>12.1f} "
              f"{stepped / direct:>6.1f} {'<=1000 ' + verdict:>8}")


if __name__ == "__main__":
    main()
