"""BFCL entries as envgym episodes: the agent answers with OpenAI function calls, BFCL's checker grades.

:class:`BfclEnv` serves one BFCL category's entries (the task names the category and the entry id in
``metadata``; question, function docs and answers come from the installed ``bfcl-eval`` wheel, see
:mod:`envgym_bfcl.data`). ``info["tools"]`` are the entry's functions as BFCL's OpenAI handler sends them;
system messages of the question are ``info["policy"]``, its user messages the observation.

- **Single-turn** categories: the agent's first response is its one answer, as in BFCL (one model
  response): its tool calls (``{name: arguments}`` as BFCL's function-calling handlers record them), or a
  text message for no call. A well-formed answer ends the episode; one BFCL could not decode (an unknown
  tool, arguments that are not a JSON object) is kept as the answer and comes back as an error observation
  (the next response ends the episode; the first answer stands). An empty action is an error and no answer.
- **Multi-turn** categories: every tool call is executed on BFCL's own API simulators
  (``execute_multi_turn_func_call``, per-episode instances) and its result comes back; a message without tool
  calls ends the user turn, and the next turn's question is the observation; after the last turn the
  episode ends. Calls are validated before they reach BFCL's executor, which ``eval``\\ s them: the tool name
  must be one of the entry's functions and every argument name an identifier (values are JSON, written as
  Python literals), so no agent text is ever evaluated as code.

In the irrelevance categories the correct answer is to call no function, so doing nothing is correct: the
env says so through :meth:`BfclEnv.null_accepted` (``envgym check`` then requires the null agent to pass
there and a call of the entry's first function to fail).

Grading is the ``bfcl`` verifier kind (:mod:`envgym_bfcl.verify`), which runs BFCL's own checker on what the
env recorded (``VerifyContext.transcript``).
"""

from __future__ import annotations

import json
import keyword
import re
import secrets
from typing import Any, ClassVar

from envgym.plugin import (
    Action,
    ArgumentsError,
    CallRecord,
    Env,
    EnvError,
    NullAccepted,
    Observation,
    StepResult,
    TaskSpec,
    ToolCall,
    ToolResult,
    VerifyContext,
    decode_arguments,
)
from envgym_bfcl import data

__all__ = ["BfclEnv", "drop_instances", "safe_call_strings"]


def safe_call_strings(calls: list[dict[str, str]], allowed: set[str]) -> tuple[list[str], str | None]:
    """BFCL's executable call strings of ``calls`` (``{name: arguments JSON}``), or the reason they are refused."""
    from bfcl_eval.model_handler.utils import convert_to_function_call

    for call in calls:
        for name, arguments in call.items():
            if name not in allowed:
                return [], f"unknown tool {name!r}"
            try:  # the kernel's decoder: bad JSON or nesting too deep to decode is the agent's error, never a crash
                parsed = decode_arguments(name, arguments)
            except ArgumentsError as exc:
                return [], f"{name}: {exc}"
            bad = [k for k in parsed if not k.isidentifier() or keyword.iskeyword(k)]
            if bad:
                return [], f"{name}: argument names must be identifiers, not {bad[0]!r}"
    try:
        return convert_to_function_call(calls), None
    except RecursionError:  # decodable, but too deep for BFCL's own conversion
        return [], "arguments nest too deeply to convert into a call"


def drop_instances(namespace: str) -> None:
    """Forget the API-simulator instances BFCL's executor keeps (module globals) for one namespace."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    prefix = re.sub(r"[-./:]", "_", namespace)
    names = vars(multi_turn_utils)
    # list() copies the keys in one step: graders in worker threads add instances to the same globals meanwhile
    for name in [n for n in list(names) if n.startswith(prefix) and n.endswith("_instance")]:
        names.pop(name, None)


class BfclEnv(Env):
    """``bfcl/<category>-v1``: one BFCL category (see the module docstring)."""

    has_write_actions: ClassVar[bool] = False

    def __init__(self, category: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if category not in data.CATEGORIES:
            raise EnvError(f"BFCL category {category!r} is not included (included: {', '.join(data.CATEGORIES)})")
        self.category = category
        self.multi_turn = category in data.MULTI_TURN
        self.message_ends_turn = self.multi_turn
        """Read by ``envgym check``: a message ends a turn, and only the last turn's ends the episode."""
        self._entry: dict[str, Any] = {}
        self._allowed: set[str] = set()
        self._result: Any = None
        self._turns: list[list[list[str]]] = []
        self._turn = 0
        self._calls: list[CallRecord] = []
        self._final: str | None = None
        self._namespace = ""

    async def reset(self, *, task: Any = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        chosen = self.choose_task(task, seed, options)
        self._release()
        self._entry = data.entry(chosen.metadata["bfcl_category"], chosen.metadata["bfcl_id"])
        tools = data.tools_of(self._entry)
        self._allowed = {t["function"]["name"] for t in tools}
        self.task = chosen
        self._result, self._turns, self._turn, self._calls, self._final = None, [[]], 0, [], None
        self._namespace = f"envgym_{secrets.token_hex(6)}"
        policy, text = self._messages(0)
        info = {"tools": tools, "policy": policy, "task_id": chosen.id, "task_hash": chosen.hash,
                "env_id": chosen.env_id, "split": chosen.split, "bfcl_id": self._entry["id"]}
        return Observation(text=text), info

    def _messages(self, turn: int) -> tuple[str, str]:
        messages = self._entry["question"][turn]
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        return system, user

    async def step(self, action: Action) -> StepResult:
        if self.task is None:
            raise EnvError("step() without an open episode")
        calls = [{c.name: c.arguments} for c in action.tool_calls]
        if not calls and action.text is None:
            return StepResult(Observation(last_action_error="empty action: send tool calls or a message"),
                              0.0, False, False, {})
        if not self.multi_turn:
            return self._answer(action, calls)
        if calls:
            return self._execute(action, calls)
        self._final = action.text
        self._turn += 1
        if self._turn >= len(self._entry["question"]):
            return StepResult(Observation(text="Episode finished."), 0.0, True, False, {})
        self._turns.append([])
        return StepResult(Observation(text=self._messages(self._turn)[1]), 0.0, False, False, {})

    def _answer(self, action: Action, calls: list[dict[str, str]]) -> StepResult:
        """Single-turn: the first response is the answer, as in BFCL. One BFCL would not decode (an unknown
        tool, arguments that are not a JSON object) is kept as the answer but comes back as an error
        observation without ending the episode (the next response ends it; the first answer stands)."""
        first = self._result is None
        if first:
            self._result = calls if calls else (action.text or "")
            self._final = action.text
        _, refused = safe_call_strings(calls, self._allowed) if calls else ([], None)
        if first:
            for call in action.tool_calls:
                self._calls.append(CallRecord(index=len(self._calls), name=call.name, kind="read", arguments=None,
                                              ok=refused is None, error=refused))
        if refused is not None:
            results = tuple(ToolResult(call_id=c.id, name=c.name, content=refused, error=refused)
                            for c in action.tool_calls)
            return StepResult(Observation(tool_results=results, last_action_error=refused), 0.0, False, False, {})
        return StepResult(Observation(text="Episode finished."), 0.0, True, False, {})

    def _execute(self, action: Action, calls: list[dict[str, str]]) -> StepResult:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        strings, refused = safe_call_strings(calls, self._allowed)
        if refused is not None:
            results = tuple(ToolResult(call_id=c.id, name=c.name, content=refused, error=refused)
                            for c in action.tool_calls)
            for call in action.tool_calls:
                self._calls.append(CallRecord(index=len(self._calls), name=call.name, kind="unknown", arguments=None,
                                              ok=False, error=refused))
            return StepResult(Observation(tool_results=results, last_action_error=refused), 0.0, False, False, {})
        outputs, _ = execute_multi_turn_func_call(strings, self._entry["initial_config"],
                                                  self._entry["involved_classes"], self._namespace,
                                                  self._entry["id"], long_context="long_context" in self.category)
        self._turns[-1].append(strings)
        results = []
        for call, output in zip(action.tool_calls, outputs, strict=True):
            error = output if output.startswith("Error during execution") else None
            self._calls.append(CallRecord(index=len(self._calls), name=call.name, kind="write",
                                          arguments=json.loads(call.arguments), ok=error is None, error=error))
            results.append(ToolResult(call_id=call.id, name=call.name, content=output, error=error))
        return StepResult(Observation(tool_results=tuple(results)), 0.0, False, False, {})

    async def verify_context(self) -> VerifyContext:
        if self.task is None:
            raise EnvError("verify() without an open episode")
        record = {"category": self.category, "id": self._entry["id"],
                  "result": self._turns if self.multi_turn else self._result}
        return VerifyContext(calls=list(self._calls), final_answer=self._final, transcript=[{"bfcl": record}],
                             task=self.task)

    def null_accepted(self, task: TaskSpec) -> NullAccepted | None:
        category = task.metadata.get("bfcl_category", "")
        if "irrelevance" not in category:
            return None
        from envgym_bfcl.build import first_function_call

        tools = data.tools_of(data.entry(category, task.metadata["bfcl_id"]))
        # a few live entries offer no function at all: any call is still an answer, and wrong
        wrong = first_function_call(tools) if tools else (Action(tool_calls=(ToolCall(name="any_function"),)),)
        return NullAccepted(reason="BFCL irrelevance: no function fits the request, the correct answer calls none",
                            wrong=wrong)

    def _release(self) -> None:
        if self._namespace:
            drop_instances(self._namespace)
            self._namespace = ""

    async def close(self) -> None:
        self._release()
