"""BFCL through envgym versus BFCL's own evaluation: gold score, agreement on gold and perturbed answers, speed.

For every entry of every included category (or ``--limit`` per category) this runs, side by side:

  envgym    the answer as an agent's actions through ``envgym.make("bfcl/...")`` (reset, steps, the kernel's
            grading with the ``bfcl`` verifier)
  bfcl      BFCL's own evaluation, ``bfcl evaluate --partial-eval`` (``eval_runner.main``) for the same
            function-calling model, on the same answers in BFCL's result file format

on the gold answer (the task's reference solution) and on perturbed answers: for AST categories the first
call's first argument changed (a string reversed and suffixed, a number + 1, a boolean flipped), the call's
name changed, or the call dropped; for relevance categories a call where none is wanted and vice versa; for
multi-turn the last call of the last turn dropped. Prints per category: entries, gold score (envgym),
agreement with BFCL on gold and on perturbed answers, the disagreements' ids, and oracle episodes/s.
The comparison is :mod:`envgym_bfcl.parity` (CI runs it on a sample: ``tests/bfcl/test_parity.py``).
Needs bfcl-eval (``pip install 'envgym[bfcl]' && envgym bfcl setup``).
Usage: ``python benchmarks/bfcl_parity.py [--limit N] [--category C ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import envgym
from envgym.task import load_suite
from envgym_bfcl import data
from envgym_bfcl.build import suite_name
from envgym_bfcl.parity import compare, envgym_score


async def run(categories: list[str], limit: int | None) -> None:
    print(f"bfcl-eval {data.version()}, checker model config {data.MODEL_NAME}, load average {os.getloadavg()}")
    print(f"{'category':<24} {'entries':>7} {'gold':>6} {'agree gold':>10} {'agree perturbed':>16} "
          f"{'oracle eps/s':>12}")
    for category in categories:
        tasks = load_suite(suite_name(category))[:limit]
        async with envgym.make(tasks[0].env_id) as env:
            started = time.perf_counter()
            for task in tasks:
                await envgym_score(env, task, task.solution)
            seconds = time.perf_counter() - started
            parity = await compare(env, tasks)
        print(f"{category:<24} {len(tasks):>7} {parity.gold / len(tasks):>6.3f} {parity.agree_gold}/{len(tasks):<8} "
              f"{parity.agree_perturbed}/{parity.perturbed:<14} {len(tasks) / seconds:>12.1f}")
        if parity.gold_failed:
            print(f"  gold below 1: {', '.join(parity.gold_failed[:20])}"
                  + (" ..." if len(parity.gold_failed) > 20 else ""))
        if parity.disagreements:
            print(f"  disagreements: {', '.join(parity.disagreements[:20])}"
                  + (" ..." if len(parity.disagreements) > 20 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int)
    parser.add_argument("--category", action="append", choices=data.CATEGORIES)
    args = parser.parse_args()
    asyncio.run(run(args.category or list(data.CATEGORIES), args.limit))


if __name__ == "__main__":
    main()
