"""Write the BFCL suites (``tasks/bfcl-<category>/``) from the installed ``bfcl-eval``: ``python -m envgym_bfcl.build``.

Each task is small: it names its BFCL entry (``metadata.bfcl_category``, ``metadata.bfcl_id``; the question,
function docs and answers stay in the wheel, read by :mod:`envgym_bfcl.data`), carries the first user
message as its instruction, the ``bfcl`` verifier, and a reference solution built from BFCL's own answer:

- AST categories: per expected call, each parameter's first acceptable value, a parameter that may be left
  out (``""`` among its values) left out (or, where BFCL rejects that, given its first value), names with
  ``.`` written with ``_`` as BFCL's OpenAI handler does;
- irrelevance: a message and no call; relevance: a call of the first function with its required parameters;
- multi-turn: the ground-truth calls of each turn (positional arguments named from the simulator's own
  method signature), one call per step, then a message that ends the turn.

Every reference is checked by BFCL's own checker at build time; an entry whose possible answer BFCL's checker
rejects (its answer misses a required parameter, or offers no value for one) cannot be passed by any model
and is left out, named in the suite's README with BFCL's error. The files are deterministic for one
``bfcl-eval`` version (written into each suite's README).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from pathlib import Path
from typing import Any

from envgym.plugin import Action, Limits, TaskSpec, ToolCall, suites_root, write_tasks
from envgym_bfcl import data
from envgym_bfcl.verify import BfclSpec

LICENCE = """\
Task data: the Berkeley Function Calling Leaderboard (BFCL, Gorilla project, UC Berkeley), distributed in the
PyPI package `bfcl-eval` under the Apache License 2.0. These files only name BFCL entries and carry reference
calls derived from BFCL's possible answers; the questions, function docs and answers are read from the
installed wheel at run time, and every episode is graded by BFCL's own checker."""


def env_id(category: str) -> str:
    return f"bfcl/{category.replace('_', '-')}-v1"


def suite_name(category: str) -> str:
    return f"bfcl-{category.replace('_', '-')}"


def _pick(options: Any) -> Any:
    """The first acceptable value of a possible-answer option list (recursing into dicts and lists of dicts)."""
    for option in options:
        if option != "":
            return _expand(option)
    return None


def _expand(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pick(v) if isinstance(v, list) else v for k, v in value.items()
                if not (isinstance(v, list) and all(o == "" for o in v))}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


def _ast_solution(answer: list[dict[str, Any]], *, omit_optional: bool) -> tuple[Action, ...]:
    calls = []
    for index, expected in enumerate(answer):
        [(name, params)] = expected.items()
        # "" among a parameter's values: it may be left out (some answers also list values for parameters the
        # function doc does not have, others mark a required one optional: build() tries both ways)
        args = {k: _pick(v) for k, v in params.items()
                if ("" not in v if omit_optional else any(o != "" for o in v))}
        calls.append(ToolCall(id=f"call_{index + 1}", name=name.replace(".", "_"), arguments=json.dumps(args)))
    return (Action(tool_calls=tuple(calls)),)


SINGLE_TURN_STEPS = 5
"""A single-turn episode's step limit: the first response is the answer; the rest only end the episode (and
leave room for ``envgym check``'s error probes)."""

_DEFAULTS = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def first_function_call(tools: list[dict[str, Any]]) -> tuple[Action, ...]:
    """A call of the first function with its required parameters (placeholder values): the reference of a
    relevance entry, and the wrong answer of an irrelevance entry."""
    function = tools[0]["function"]
    params = function.get("parameters", {})
    args = {k: _DEFAULTS.get(params["properties"][k].get("type", "string"), "x") for k in params.get("required", [])}
    return (Action(tool_calls=(ToolCall(id="call_1", name=function["name"], arguments=json.dumps(args)),)),)


def _parameters(item: dict[str, Any]) -> dict[str, list[str]]:
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    names: dict[str, list[str]] = {}
    for class_name in item["involved_classes"]:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
        for method_name, method in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not method_name.startswith("_"):
                names[method_name] = [p for p in inspect.signature(method).parameters if p != "self"]
    return names


def _multi_turn_solution(item: dict[str, Any], truth: list[list[str]]) -> tuple[Action, ...]:
    signatures = _parameters(item)
    actions: list[Action] = []
    for turn in truth:
        for text in turn:
            call = ast.parse(text, mode="eval").body
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name), text
            name = call.func.id
            args = {signatures[name][i]: ast.literal_eval(a) for i, a in enumerate(call.args)}
            args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
            actions.append(Action(tool_calls=(ToolCall(id=f"call_{len(actions) + 1}", name=name,
                                                       arguments=json.dumps(args)),)))
        actions.append(Action.say("Done."))
    return tuple(actions)


def gold_result(task: TaskSpec) -> Any:
    """The reference solution as the result :func:`envgym_bfcl.verify.check_result` takes."""
    if task.metadata["bfcl_category"] in data.MULTI_TURN:
        from bfcl_eval.model_handler.utils import convert_to_function_call

        turns: list[list[list[str]]] = [[]]
        for action in task.solution or ():
            if action.tool_calls:
                turns[-1].append(convert_to_function_call([{c.name: c.arguments} for c in action.tool_calls]))
            else:
                turns.append([])
        return turns[:-1]
    first = (task.solution or (Action.say(""),))[0]
    return [{c.name: c.arguments} for c in first.tool_calls] if first.tool_calls else (first.text or "")


def build(category: str) -> tuple[list[TaskSpec], dict[str, str]]:
    """The category's tasks, and the entries left out with BFCL's reason."""
    from envgym_bfcl.verify import check_result

    tasks, left_out = [], {}
    answers = data.answers(category)
    for entry_id, item in data.entries(category).items():
        tools = data.tools_of(item)
        first = "\n\n".join(m["content"] for m in item["question"][0] if m["role"] != "system")
        limits = Limits(max_steps=SINGLE_TURN_STEPS)
        if category in data.MULTI_TURN:
            solution = _multi_turn_solution(item, answers[entry_id]["ground_truth"])
            limits = Limits(max_steps=len(solution) + 40, episode_timeout_s=600)
        elif "irrelevance" in category:
            solution = (Action.say("None of the available functions can do that."),)
        elif "relevance" in category:
            solution = first_function_call(tools)
        else:
            solution = _ast_solution(answers[entry_id]["ground_truth"], omit_optional=True)
        metadata = {"bfcl_category": category, "bfcl_id": entry_id, "bfcl_version": data.version()}
        tasks.append(TaskSpec(
            id=entry_id.replace("_", "-").lower(), env_id=env_id(category), split="test",
            instruction=first or "(empty)", limits=limits, solution=solution, tags=("bfcl", category),
            verifiers=(BfclSpec(category=category, entry_id=entry_id),), metadata=metadata))
        verdict = check_result(category, entry_id, gold_result(tasks[-1]))
        if not verdict.get("valid") and category in data.SINGLE_TURN and "relevance" not in category:
            other = _ast_solution(answers[entry_id]["ground_truth"], omit_optional=False)
            tasks[-1] = tasks[-1].model_copy(update={"solution": other})
            verdict = check_result(category, entry_id, gold_result(tasks[-1]))
        if not verdict.get("valid"):
            tasks.pop()
            left_out[entry_id] = str(verdict.get("error_type") or verdict.get("error_message") or verdict)[:200]
    return tasks, left_out


def main() -> None:
    for category in data.CATEGORIES:
        tasks, left_out = build(category)
        folder = suites_root() / suite_name(category)
        folder.mkdir(parents=True, exist_ok=True)
        write_tasks(folder / "tasks.jsonl", tasks)
        kind = ("multi-turn: calls executed on BFCL's API simulators, state and responses compared"
                if category in data.MULTI_TURN else "relevance detection" if "relevance" in category
                else "single-turn AST check against BFCL's possible answers")
        Path(folder / "README.md").write_text(
            f"# {suite_name(category)}\n\nBFCL category `{category}` ({len(tasks)} entries, bfcl-eval "
            f"{data.version()}) for `{env_id(category)}`: {kind}, graded by BFCL's own checker "
            f"(`envgym_bfcl.verify`). Generated by `python -m envgym_bfcl.build`.\n\n{_left_out(left_out)}{LICENCE}\n",
            encoding="utf-8")
        print(f"wrote {len(tasks)} tasks to {folder}" + (f" ({len(left_out)} left out)" if left_out else ""))


def _left_out(left_out: dict[str, str]) -> str:
    if not left_out:
        return ""
    lines = "\n".join(f"- `{entry_id}`: {reason}" for entry_id, reason in sorted(left_out.items()))
    return (f"Left out ({len(left_out)}): BFCL's own checker rejects the entry's possible answer, so no answer "
            f"can pass it:\n\n{lines}\n\n")


if __name__ == "__main__":
    main()
