"""The agent (policy) contract.

An agent is built for one episode, told what the episode offers, then asked for an action per step::

    await agent.reset(observation, info)      # info["tools"]: OpenAI schemas; info["policy"]: rules to follow
    action = await agent.act(observation)     # an Action: tool calls and/or a final message
    agent.usage                               # tokens and calls so far

Agents never see a task's verifiers or reference solution; the oracle is built from the task on purpose.
An agent that cannot act (endpoint down, model crash) raises :class:`~envgym.errors.PolicyError`, and the
episode is recorded as an infra error. ``AgentFactory`` builds one agent per task; it owns what episodes
share (an HTTP client, a loaded model) and is closed once at the end of a run.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Protocol

from envgym.types import Action, Observation, Usage

if TYPE_CHECKING:
    from envgym.task import TaskSpec


class Agent(abc.ABC):
    name: str = "agent"

    def __init__(self) -> None:
        self.usage = Usage()
        self.token_data: list[dict[str, Any]] = []

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Start an episode."""

    @abc.abstractmethod
    async def act(self, observation: Observation) -> Action: ...

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release per-episode resources."""


class AgentFactory(Protocol):
    """Builds agents per task; ``describe()`` goes into every record (agent id, model, settings)."""

    def create(self, task: TaskSpec) -> Agent: ...

    def describe(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...
