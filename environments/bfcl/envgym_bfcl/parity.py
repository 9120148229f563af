"""Parity of envgym's BFCL grading with BFCL's own evaluation, answer by answer.

:func:`compare` runs each task's reference answer and :func:`perturbations` of it (for AST categories the
first call's first argument changed, the call renamed, or a call dropped; for relevance categories a call
where none is wanted and the reverse; for multi-turn the last call dropped) two ways, side by side:

- **envgym**: the answer as an agent's actions through an env made by ``envgym.make`` (reset, steps, the
  kernel's grading with the ``bfcl`` verifier);
- **bfcl**: BFCL's own per-entry evaluation (``eval_runner._evaluate_single_*_entry``, with BFCL's handler
  for :data:`~envgym_bfcl.data.MODEL_NAME`) on the same answer in BFCL's result format.

and counts agreement. Used by ``benchmarks/bfcl_parity.py`` (every entry, with speed) and by CI's sampled
parity test (``tests/bfcl/test_parity.py``). Needs the ``bfcl`` extra.
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from envgym.plugin import Action, Env, TaskSpec, ToolCall
from envgym_bfcl import data

__all__ = ["Parity", "bfcl_handler", "bfcl_result", "bfcl_valid", "compare", "envgym_score", "perturbations"]


def perturbations(task: TaskSpec) -> list[tuple[str, tuple[Action, ...]]]:
    """Wrong answers derived from the task's reference, each with a label."""
    category = task.metadata["bfcl_category"]
    solution = task.solution or ()
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


async def envgym_score(env: Env, task: TaskSpec, actions: tuple[Action, ...]) -> float:
    """The kernel's score of ``actions`` played on ``env`` (made by ``envgym.make``, so it grades on termination)."""
    await env.reset(task=task)
    for action in actions:
        _, _, terminated, truncated, info = await env.step(action)
        if terminated or truncated:
            return info["verdict"].score
    return (await env.verify()).score


def bfcl_result(task: TaskSpec, actions: tuple[Action, ...]) -> Any:
    """The answer in the result format BFCL's function-calling handlers write."""
    if task.metadata["bfcl_category"] in data.MULTI_TURN:
        turns: list[list[Any]] = [[]]
        for action in actions:
            if action.tool_calls:
                turns[-1].append([{c.name: c.arguments} for c in action.tool_calls])
            else:
                turns.append([])
        return turns[:-1]
    first = actions[0]
    return [{c.name: c.arguments} for c in first.tool_calls] if first.tool_calls else (first.text or "")


def bfcl_handler() -> Any:
    """BFCL's handler for :data:`~envgym_bfcl.data.MODEL_NAME` (built, never called: no key is needed)."""
    from bfcl_eval.eval_checker.eval_runner import get_handler

    os.environ.setdefault("OPENAI_API_KEY", "unused")
    return get_handler(data.MODEL_NAME)


def bfcl_valid(handler: Any, task: TaskSpec, result: Any) -> bool:
    """BFCL's own per-entry evaluation of ``result`` (BFCL's result format)."""
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


@dataclass
class Parity:
    entries: int = 0
    gold: int = 0
    """References envgym scores 1 (the others are named in ``gold_failed``)."""
    gold_failed: list[str] = field(default_factory=list)
    agree_gold: int = 0
    perturbed: int = 0
    agree_perturbed: int = 0
    disagreements: list[str] = field(default_factory=list)
    """``<bfcl id>:<gold or perturbation label>`` where envgym and BFCL disagree."""


async def compare(env: Env, handler: Any, tasks: list[TaskSpec]) -> Parity:
    """Every task's reference and perturbed answers graded by envgym (on ``env``) and by BFCL."""
    parity = Parity(entries=len(tasks))
    for task in tasks:
        for label, actions in (("gold", task.solution or ()), *perturbations(task)):
            ours = await envgym_score(env, task, actions) == 1.0
            theirs = bfcl_valid(handler, task, bfcl_result(task, actions))
            if label == "gold":
                parity.gold += ours
                if not ours:
                    parity.gold_failed.append(task.metadata["bfcl_id"])
                parity.agree_gold += ours == theirs
            else:
                parity.perturbed += 1
                parity.agree_perturbed += ours == theirs
            if ours != theirs:
                parity.disagreements.append(f"{task.metadata['bfcl_id']}:{label}")
    return parity
