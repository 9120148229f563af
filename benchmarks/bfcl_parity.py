"""BFCL through envgym versus BFCL's own evaluation: gold score, agreement on gold and perturbed answers, speed.

For every entry of every included category (or ``--limit`` per category) this runs, side by side:

  envgym    the answer as an agent's actions through ``envgym.make("bfcl/...")`` (reset, steps, the kernel's
            grading with the ``bfcl`` verifier)
  bfcl      BFCL's own per-entry evaluation (``eval_runner._evaluate_single_ast_entry`` /
            ``_evaluate_single_relevance_entry`` / ``_evaluate_single_multi_turn_entry``) with BFCL's
            handler for the same function-calling model, on the same answer in BFCL's result format

on the gold answer (the task's reference solution) and on perturbed answers: for AST categories the first
call's first argument changed (a string reversed and suffixed, a number + 1, a boolean flipped), the call's
name changed, or the call dropped; for relevance categories a call where none is wanted and vice versa; for
multi-turn the last call of the last turn dropped. Prints per category: entries, gold score (envgym),
agreement with BFCL on gold and on perturbed answers, the disagreements' ids, and oracle episodes/s.
Needs the ``bfcl`` extra. Usage: ``python benchmarks/bfcl_parity.py [--limit N] [--category C ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import time
from typing import Any

import envgym
from envgym.task import load_suite
from envgym.types import Action, ToolCall
from envgym_bfcl import data
from envgym_bfcl.build import suite_name


def perturbations(task: Any) -> list[tuple[str, tuple[Action, ...]]]:
    category = task.metadata["bfcl_category"]
    solution = task.solution
    if category in data.MULTI_TURN:
        calls = [i for i, a in enumerate(solution) if a.tool_calls]
        return [("drop-last-call", solution[: calls[-1]] + solution[calls[-1] + 1:])] if calls else []
    if "irrelevance" in category:
        tools = data.tools_of(data.entry(category, task.metadata["bfcl_id"]))
        if not tools:  # an entry offering no function: no call to perturb with
            return []
        tool = tools[0]["function"]["name"]
        return [("call-anyway", (Action(tool_calls=(ToolCall(id="p", name=tool, arguments="{}"),)),))]
    if "relevance" in category:
        return [("no-call", (Action.say("I will not call anything."),))]
    first = solution[0].tool_calls
    out = [("drop-call", (Action(tool_calls=first[1:]) if len(first) > 1 else Action.say("No call."),)),
           ("rename", (Action(tool_calls=(first[0].model_copy(update={"name": first[0].name + "_x"}), *first[1:])),))]
    args = json.loads(first[0].arguments)
    if args:
        key = next(iter(args))
        value = args[key]
        changed = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int | float)
                   else value[::-1] + "_x" if isinstance(value, str) else [*value, "x"] if isinstance(value, list)
                   else {**value, "x": 1} if isinstance(value, dict) else "x")
        call = first[0].model_copy(update={"arguments": json.dumps({**args, key: changed})})
        out.append(("change-arg", (Action(tool_calls=(call, *first[1:])),)))
    return out


async def envgym_score(env: Any, task: Any, actions: tuple[Action, ...]) -> float:
    await env.reset(task=task)
    for action in actions:
        _, _, terminated, truncated, info = await env.step(action)
        if terminated or truncated:
            return info["verdict"].score
    return (await env.verify()).score


def bfcl_result(task: Any, actions: tuple[Action, ...]) -> Any:
    """The answer in the result format BFCL's function-calling handlers write."""
    category = task.metadata["bfcl_category"]
    if category in data.MULTI_TURN:
        turns: list[list[Any]] = [[]]
        for action in actions:
            if action.tool_calls:
                turns[-1].append([{c.name: c.arguments} for c in action.tool_calls])
            else:
                turns.append([])
        return turns[:-1]
    first = actions[0]
    return [{c.name: c.arguments} for c in first.tool_calls] if first.tool_calls else (first.text or "")


def bfcl_valid(handler: Any, task: Any, result: Any) -> bool:
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker import eval_runner

    category, entry_id = task.metadata["bfcl_category"], task.metadata["bfcl_id"]
    prompt = copy.deepcopy(data.entry(category, entry_id))
    if category in data.MULTI_TURN:
        truth = data.answers(category)[entry_id]["ground_truth"]
        out = eval_runner._evaluate_single_multi_turn_entry(handler, entry_id, result, truth, prompt,
                                                            f"parity_{os.getpid()}_{time.monotonic_ns()}", category)
    elif "relevance" in category:
        out = eval_runner._evaluate_single_relevance_entry(handler, entry_id, result, prompt, data.MODEL_NAME,
                                                           category)
    else:
        answer = data.answers(category)[entry_id]["ground_truth"]
        out = eval_runner._evaluate_single_ast_entry(handler, entry_id, result, answer, prompt, data.MODEL_NAME,
                                                     category, Language.PYTHON, ReturnFormat.PYTHON)
    return bool(out["valid"])


async def run(categories: list[str], limit: int | None) -> None:
    from bfcl_eval.eval_checker.eval_runner import get_handler

    os.environ.setdefault("OPENAI_API_KEY", "unused")  # the handler is built, never called
    handler = get_handler(data.MODEL_NAME)
    print(f"bfcl-eval {data.version()}, checker model config {data.MODEL_NAME}")
    print(f"{'category':<24} {'entries':>7} {'gold':>6} {'agree gold':>10} {'agree perturbed':>16} "
          f"{'oracle eps/s':>12}")
    for category in categories:
        tasks = load_suite(suite_name(category))[:limit]
        gold = agree_gold = agree_bad = bad = 0
        disagreements: list[str] = []
        async with envgym.make(tasks[0].env_id) as env:
            started = time.perf_counter()
            gold_failed = []
            for task in tasks:
                passed = await envgym_score(env, task, task.solution) == 1.0
                gold += passed
                if not passed:
                    gold_failed.append(task.metadata["bfcl_id"])
            seconds = time.perf_counter() - started
            for task in tasks:
                ours = await envgym_score(env, task, task.solution) == 1.0
                theirs = bfcl_valid(handler, task, bfcl_result(task, task.solution))
                agree_gold += ours == theirs
                if ours != theirs:
                    disagreements.append(f"{task.metadata['bfcl_id']}:gold")
                for label, actions in perturbations(task):
                    ours = await envgym_score(env, task, actions) == 1.0
                    theirs = bfcl_valid(handler, task, bfcl_result(task, actions))
                    bad += 1
                    agree_bad += ours == theirs
                    if ours != theirs:
                        disagreements.append(f"{task.metadata['bfcl_id']}:{label}")
        print(f"{category:<24} {len(tasks):>7} {gold / len(tasks):>6.3f} {agree_gold}/{len(tasks):<8} "
              f"{agree_bad}/{bad:<14} {len(tasks) / seconds:>12.1f}")
        if gold_failed:
            print(f"  gold below 1: {', '.join(gold_failed[:20])}" + (" ..." if len(gold_failed) > 20 else ""))
        if disagreements:
            print(f"  disagreements: {', '.join(disagreements[:20])}" + (" ..." if len(disagreements) > 20 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int)
    parser.add_argument("--category", action="append", choices=data.CATEGORIES)
    args = parser.parse_args()
    asyncio.run(run(args.category or list(data.CATEGORIES), args.limit))


if __name__ == "__main__":
    main()
