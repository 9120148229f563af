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

The generic ones: ``quote-instruction`` answers with the instruction, the observation and the initial state;
``deep-arguments`` sends tool arguments nested 100,000 deep. :class:`ForwardInstruction` (the reference with
every free-text argument replaced by the instruction) is offered for families whose free text *is* the
deliverable (a message, an email body) and listed by them; it is not generic, since elsewhere free text is
a means (a search query) and replacing it need not undo the work.

A tampering agent is built from the task, like the oracle, so it may know what a real agent does not (the
hidden test names, the expected answer's shape): a stronger adversary than any policy. It must not solve the
task. The kernel's :data:`GENERIC` agents apply to every env; a family adds its own through the class
variable :attr:`envgym.env.Env.tamper_agents`, the same way a third-party env does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from envgym.agent import Agent
from envgym.errors import SpecError
from envgym.registry import load_entry_point, spec
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


def _free_text(call: ToolCall) -> set[str]:
    """The arguments of ``call`` that are prose (a string of three words or more)."""
    args = json.loads(call.arguments or "{}")
    return {k for k, v in args.items() if isinstance(v, str) and len(v.split()) >= 3}


class ForwardInstruction(TamperAgent):
    """Replays the reference's calls with every free-text argument (a message, an email body, a file's text)
    replaced by the instruction, then claims it is done: the request forwarded is not what it asked for.

    On a task whose reference has no free text it does nothing but claim (the reference itself would solve it).
    Not in :data:`GENERIC`: a family whose free-text arguments are what gets graded lists it.
    """

    name = "forward-instruction"
    description = "the reference's calls with every free-text argument replaced by the instruction, then a claim"
    CLAIM = "Done: I have taken care of your request and saved the changes."

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        self._steps = [a for a in self.task.solution or () if a.tool_calls]
        if not any(_free_text(c) for a in self._steps for c in a.tool_calls):
            self._steps = []

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn > len(self._steps):
            return Action(text=self.CLAIM)
        calls = []
        for call in self._steps[self.turn - 1].tool_calls:
            prose, args = _free_text(call), json.loads(call.arguments or "{}")
            args = {k: self.task.instruction if k in prose else v for k, v in args.items()}
            calls.append(ToolCall(id=f"f{self.turn}_{call.id}", name=call.name, arguments=json.dumps(args)))
        return Action(tool_calls=tuple(calls))


GENERIC: tuple[type[TamperAgent], ...] = (QuoteInstruction, DeepArguments)
"""The kernel's tampering agents, run on every env."""


def tamper_agents_for(env: Any) -> tuple[type[TamperAgent], ...]:
    """:data:`GENERIC` plus the env class's own ``tamper_agents`` (``env`` may be wrapped, or an env class)."""
    cls = env if isinstance(env, type) else type(getattr(env, "unwrapped", env))
    own = tuple(getattr(cls, "tamper_agents", ()))
    return GENERIC + tuple(a for a in own if a not in GENERIC)


class TamperFactory:
    """The agent factory of ``--agent tamper:NAME``: the tampering agent ``NAME`` of each task's env."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._kinds: dict[str, dict[str, type[TamperAgent]]] = {}

    def kinds(self, env_id: str) -> dict[str, type[TamperAgent]]:
        """Name -> tampering agent of ``env_id``'s env class."""
        if env_id not in self._kinds:
            factory = load_entry_point(spec(env_id).entry_point)
            self._kinds[env_id] = {k.name: k for k in tamper_agents_for(factory)}
        return self._kinds[env_id]

    def create(self, task: TaskSpec) -> TamperAgent:
        kinds = self.kinds(task.env_id)
        if self.name not in kinds:
            raise SpecError(f"{task.env_id} has no tampering agent {self.name!r} (it has: {', '.join(sorted(kinds))})",
                            field="agent")
        return kinds[self.name](task)

    def describe(self) -> dict[str, Any]:
        return {"type": "tamper", "name": self.name}

    async def aclose(self) -> None:
        return None
