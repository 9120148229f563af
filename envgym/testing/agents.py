"""Scripted agents for tests: one that plays a fixed list of actions, one whose model endpoint is down.

:class:`ScriptedAgent` records every observation it was shown (``seen``) and whether it was closed, so a
test can assert what the env told the agent and that the rollout cleaned up. :class:`BrokenAgent` raises
:class:`~envgym.errors.PolicyError` on every ``act``: the rollout records an ``infra_error`` episode (a dead
model endpoint is nothing the agent's moves caused), never a crash.
"""

from __future__ import annotations

import asyncio

from envgym.agent import Agent
from envgym.errors import PolicyError
from envgym.types import Action, Observation


class ScriptedAgent(Agent):
    """Plays ``actions`` in order, then empty final messages (optionally sleeping ``delay`` s per act)."""

    name = "scripted"

    def __init__(self, actions: list[Action], *, delay: float = 0.0) -> None:
        super().__init__()
        self.actions = list(actions)
        self.delay = delay
        self.seen: list[Observation] = []
        self.closed = False

    async def act(self, observation: Observation) -> Action:
        self.seen.append(observation)
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.actions.pop(0) if self.actions else Action(text="")

    async def close(self) -> None:
        self.closed = True


class BrokenAgent(Agent):
    """An agent whose model endpoint is down: every ``act`` raises :class:`~envgym.errors.PolicyError`."""

    name = "broken"

    async def act(self, observation: Observation) -> Action:
        raise PolicyError("endpoint unreachable")
