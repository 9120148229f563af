"""Parity of envgym's BFCL grading with BFCL's own evaluation, answer by answer.

:func:`compare` grades each task's reference answer and :func:`perturbations` of it (for AST categories the
first call's first argument changed, the call renamed, or a call dropped; for relevance categories a call
where none is wanted and the reverse; for multi-turn the last call dropped) two ways:

- **envgym**: the answer as an agent's actions through an env made by ``envgym.make`` (reset, steps, the
  kernel's grading with the ``bfcl`` verifier);
- **bfcl**: BFCL's own evaluation through its public functions, as ``bfcl evaluate --partial-eval`` runs
  it: a result file written as BFCL's generation step writes it for :data:`~envgym_bfcl.data.MODEL_NAME`,
  read by BFCL's ``load_file`` and evaluated by ``eval_runner.evaluate_task`` with ``get_handler``'s handler;
  the entries its score file lists are the invalid ones (:func:`bfcl_evaluate`). ``bfcl evaluate``'s
  ``runner`` does exactly this per result file and then rebuilds its leaderboard tables from every
  category's data (4-6 s a call, nothing parity reads), so parity calls ``evaluate_task`` itself. A result
  file holds an entry id once, so the answers go in rounds: every task's gold answer, then every task's
  first perturbation, and so on.

and counts agreement. No private function of bfcl-eval is used (until bfcl-eval 2026.3.23's
``eval_runner._evaluate_single_*_entry`` were called per answer); the one reach below its surface is
:func:`envgym_bfcl.env.drop_instances`, which forgets the API-simulator instances BFCL's executor keeps in its
module globals, so that a later round starts from fresh simulators. Used by ``benchmarks/bfcl_parity.py``
(every entry, with speed) and by CI's sampled parity test (``tests/bfcl/test_parity.py``). Needs bfcl-eval
(``pip install 'envgym[bfcl]' && envgym bfcl setup``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envgym.plugin import Action, Env, TaskSpec, ToolCall
from envgym_bfcl import data, install
from envgym_bfcl.env import drop_instances

__all__ = ["Parity", "bfcl_evaluate", "bfcl_result", "compare", "envgym_score", "perturbations"]


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


def bfcl_evaluate(category: str, results: dict[str, Any]) -> set[str]:
    """The ids of ``results`` (entry id -> answer in BFCL's result format) that BFCL's own evaluation marks
    invalid: the result file read and evaluated as ``bfcl evaluate --partial-eval`` does, in a temporary folder."""
    from bfcl_eval.eval_checker.eval_runner import evaluate_task, get_handler
    from bfcl_eval.utils import get_directory_structure_by_category, get_file_name_by_category, load_file

    os.environ.setdefault("OPENAI_API_KEY", "unused")  # BFCL builds the model's handler (never called: no key needed)
    with tempfile.TemporaryDirectory(prefix="envgym-bfcl-parity-") as tmp:
        folder = Path(tmp, "result", data.MODEL_NAME, get_directory_structure_by_category(category))
        folder.mkdir(parents=True)
        result_file = folder / get_file_name_by_category(category, is_result_file=True)
        result_file.write_text("".join(json.dumps({"id": e, "result": r}) + "\n" for e, r in results.items()))
        with contextlib.redirect_stdout(io.StringIO()):  # its progress lines
            evaluate_task(category, Path(tmp, "result"), Path(tmp, "score"), load_file(result_file, sort_by_id=True),
                          data.MODEL_NAME, get_handler(data.MODEL_NAME), {}, allow_missing=True)
        [score] = Path(tmp, "score").rglob(get_file_name_by_category(category, is_score_file=True))
        header, *failed = (json.loads(line) for line in score.read_text().splitlines())
    drop_instances(data.MODEL_NAME)  # its simulators, kept per entry id: the next round starts afresh
    if header["total_count"] != len(results):
        raise RuntimeError(f"BFCL evaluated {header['total_count']} of {len(results)} {category} answers")
    return {row["id"] for row in failed}


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


async def compare(env: Env, tasks: list[TaskSpec], *legacy: list[TaskSpec]) -> Parity:
    """Every task's reference and perturbed answers graded by envgym (on ``env``) and by BFCL (one category).

    ``compare(env, handler, tasks)`` (the form before parity went through BFCL's public ``evaluate_task``)
    still works and warns: the handler is not needed any more."""
    if legacy:
        _deprecated("compare(env, handler, tasks)", "compare(env, tasks)")
        tasks = legacy[0]
    install.require(runner=True)
    [category] = {task.metadata["bfcl_category"] for task in tasks}
    answers = {task.metadata["bfcl_id"]: [("gold", task.solution or ()), *perturbations(task)] for task in tasks}
    ours = {}
    by_id = {task.metadata["bfcl_id"]: task for task in tasks}
    for entry_id, variants in answers.items():
        for label, actions in variants:
            ours[entry_id, label] = await envgym_score(env, by_id[entry_id], actions) == 1.0
    theirs = {}
    for index in range(max(len(variants) for variants in answers.values())):
        batch = {entry_id: variants[index] for entry_id, variants in answers.items() if index < len(variants)}
        invalid = await asyncio.to_thread(
            bfcl_evaluate, category, {e: bfcl_result(by_id[e], actions) for e, (_, actions) in batch.items()})
        theirs.update({(e, label): e not in invalid for e, (label, _) in batch.items()})
    parity = Parity(entries=len(tasks))
    for (entry_id, label), passed in ours.items():
        agree = passed == theirs[entry_id, label]
        if label == "gold":
            parity.gold += passed
            parity.agree_gold += agree
            if not passed:
                parity.gold_failed.append(entry_id)
        else:
            parity.perturbed += 1
            parity.agree_perturbed += agree
        if not agree:
            parity.disagreements.append(f"{entry_id}:{label}")
    return parity


# --- deprecated: the per-answer form parity used until it went through BFCL's public evaluate_task --------------
_DEPRECATION = "(since 0.2.0; the alias goes in 0.3.0)"


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"envgym_bfcl.parity.{old} is deprecated: use {new} {_DEPRECATION}", DeprecationWarning,
                  stacklevel=3)


def bfcl_handler() -> Any:
    """Deprecated: BFCL's handler for :data:`~envgym_bfcl.data.MODEL_NAME`. :func:`bfcl_evaluate` builds its own."""
    _deprecated("bfcl_handler()", "bfcl_evaluate(category, results), which needs no handler")
    install.require(runner=True)
    from bfcl_eval.eval_checker.eval_runner import get_handler

    os.environ.setdefault("OPENAI_API_KEY", "unused")
    return get_handler(data.MODEL_NAME)


def bfcl_valid(handler: Any, task: TaskSpec, result: Any) -> bool:
    """Deprecated: BFCL's own verdict on one answer, now through :func:`bfcl_evaluate` (``handler`` unused)."""
    _deprecated("bfcl_valid(handler, task, result)", "bfcl_evaluate(category, {entry_id: result})")
    entry_id = task.metadata["bfcl_id"]
    return entry_id not in bfcl_evaluate(task.metadata["bfcl_category"], {entry_id: result})
