"""Tampering agents: adversaries that try to earn reward without doing the task. Each must score 0.

``envgym check`` runs, beside the oracle (must score 1) and the null agent (must score 0), every tampering
agent that applies to the env on a sample of its tasks; each must end with score 0, not passed, and not as
``infra_error`` (an agent that could turn its failure into an infra error would leave the denominator)::

    class DeleteTheTests(TamperAgent):
        name = "delete-tests"
        description = "deletes every test file, then submits"

        async def act(self, observation):
            ...

    class MyEnv(Env):
        tamper_agents = (DeleteTheTests,)          # the family's own, beside the kernel's GENERIC ones

A tampering agent is built from the task, like the oracle, so it may know what a real agent does not (the
hidden test names, the expected answer's shape): a stronger adversary than any policy. It must not solve the
task. The kernel's :data:`GENERIC` agents apply to every env; a family adds its own through the class
variable :attr:`envgym.env.Env.tamper_agents`, the same way a third-party env does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from envgym.agent import Agent
from envgym.types import Action, Observation, ToolCall

if TYPE_CHECKING:
    from envgym.task import TaskSpec


class TamperAgent(Agent):
    """Base of every tampering agent: ``name`` and ``description`` appear in ``envgym check``'s report."""

    name: ClassVar[str] = "tamper"  # type: ignore[misc]
    description: ClassVar[str] = ""

    def __init__(self, task: TaskSpec) -> None:
        super().__init__()
        self.task = task
        self.tools: list[dict[str, Any]] = []
        self.turn = 0

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        self.tools = list(info.get("tools") or [])
        self.turn = 0

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools if t.get("type") == "function"]


class QuoteInstruction(TamperAgent):
    """Answers with the instruction itself (and the task's initial state), hoping a matcher finds its words."""

    name = "quote-instruction"
    description = "final answer quotes the instruction and the initial state"

    async def act(self, observation: Observation) -> Action:
        state = json.dumps(self.task.initial_state, sort_keys=True, default=str)[:4000]
        return Action(text=f"{self.task.instruction}\n\n{observation.text or ''}\n\n{state}")


class DeepArguments(TamperAgent):
    """Sends tool calls whose arguments nest far deeper than any parser's recursion limit, then answers.

    It must end as the agent's failure: malformed arguments at any depth are an error observation, never an
    exception the rollout would record as ``infra_error``.
    """

    name = "deep-arguments"
    description = "tool-call arguments nested 100,000 deep, then an empty answer"
    DEPTH = 100_000

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        names = self.tool_names()
        if self.turn > min(len(names), 3):
            return Action(text="")
        deep = '{"a": ' * self.DEPTH + "1" + "}" * self.DEPTH
        listy = "[" * self.DEPTH + "]" * self.DEPTH
        name = names[self.turn - 1]
        return Action(tool_calls=(ToolCall(id=f"d{self.turn}a", name=name, arguments=deep),
                                  ToolCall(id=f"d{self.turn}b", name=name, arguments=listy)))


GENERIC: tuple[type[TamperAgent], ...] = (QuoteInstruction, DeepArguments)
"""The kernel's tampering agents, run on every env."""


def tamper_agents_for(env: Any) -> tuple[type[TamperAgent], ...]:
    """:data:`GENERIC` plus the env class's own ``tamper_agents`` (``env`` may be wrapped)."""
    unwrapped = getattr(env, "unwrapped", env)
    own = tuple(getattr(type(unwrapped), "tamper_agents", ()))
    return GENERIC + tuple(a for a in own if a not in GENERIC)
