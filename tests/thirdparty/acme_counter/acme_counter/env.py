"""The env: counters in memory; tools ``increment`` and ``read``; a final message ends the episode."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from envgym import Action, Env, Observation, StepResult, TaskSpec, ToolResult
from envgym.verify import CallRecord, VerifyContext

TOOLS = [
    {"type": "function", "function": {"name": "increment", "description": "Add `by` to counter `name`.",
                                      "parameters": {"type": "object", "additionalProperties": False,
                                                     "properties": {"name": {"type": "string"},
                                                                    "by": {"type": "integer"}},
                                                     "required": ["name", "by"]}}},
    {"type": "function", "function": {"name": "read", "description": "The value of counter `name`.",
                                      "parameters": {"type": "object", "additionalProperties": False,
                                                     "properties": {"name": {"type": "string"}},
                                                     "required": ["name"]}}},
]


class Counters:
    """A state view (``snapshot`` / ``query``) over a copy of the counters."""

    def __init__(self, counters: dict[str, int]) -> None:
        self.counters = dict(counters)

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"counters": [{"name": k, "value": v} for k, v in sorted(self.counters.items())]}

    def query(self, sql: str) -> list[dict[str, Any]]:
        raise NotImplementedError("counters have no SQL")


class CounterEnv(Env):
    has_write_actions: ClassVar[bool] = True

    def __init__(self, *, start: int = 0) -> None:
        super().__init__()
        self.start = start
        self.counters: dict[str, int] = {}
        self._initial = Counters({})
        self._calls: list[CallRecord] = []
        self._answer: str | None = None

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        self.counters = {k: int(v) + self.start for k, v in self.task.initial_state.get("counters", {}).items()}
        self._initial = Counters(self.counters)
        self._calls, self._answer = [], None
        return Observation(text=self.task.instruction), {"tools": TOOLS}

    async def step(self, action: Action) -> StepResult:
        if not action.tool_calls:
            if action.text is None:
                return StepResult(Observation(last_action_error="send tool calls or a final message"), 0.0, False,
                                  False, {})
            self._answer = action.text
            return StepResult(Observation(text="Done."), 0.0, True, False, {})  # envgym grades it
        results = [self._call(call.id, call.name, call.arguments) for call in action.tool_calls]
        errors = "; ".join(f"{r.name}: {r.error}" for r in results if r.error) or None
        return StepResult(Observation(tool_results=tuple(results), last_action_error=errors), 0.0, False, False, {})

    def _call(self, call_id: str, name: str, arguments: str | None) -> ToolResult:
        kind = "write" if name == "increment" else "read" if name == "read" else "unknown"
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                raise ValueError("arguments must be an object with a string 'name'")
            if kind == "unknown":
                raise ValueError(f"unknown tool {name!r}; tools: increment, read")
            if kind == "write":
                by = args.get("by")
                if not isinstance(by, int) or isinstance(by, bool):
                    raise ValueError("'by' must be an integer")
                self.counters[args["name"]] = self.counters.get(args["name"], 0) + by
            content = str(self.counters.get(args["name"], 0))
        except (ValueError, RecursionError) as exc:  # a malformed call is the agent's error observation
            error = str(exc) if not isinstance(exc, RecursionError) else "arguments nest too deeply"
            self._calls.append(CallRecord(index=len(self._calls), name=name, kind=kind, arguments=None, ok=False,
                                          error=error))
            return ToolResult(call_id=call_id, name=name, content=error, error=error)
        self._calls.append(CallRecord(index=len(self._calls), name=name, kind=kind, arguments=args, ok=True))
        return ToolResult(call_id=call_id, name=name, content=content)

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=list(self._calls), final_answer=self._answer, state=Counters(self.counters),
                             initial_state=self._initial, task=self.task)
