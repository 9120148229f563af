"""Baseline agents that need no model: ``oracle``, ``null`` and ``random``.

- ``oracle`` replays the task's reference solution, action by action (the admission gate: it must score 1).
- ``null`` answers at once with an empty message and does nothing (the other gate: it must score 0).
- ``random`` calls random tools with arguments drawn from their JSON schemas (values seeded per task,
  strings borrowed from what it has seen), and ends the episode with probability ``stop_p`` each step.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from envgym.agent import Agent
from envgym.errors import PolicyError
from envgym.task import TaskSpec
from envgym.types import Action, Observation, ToolCall


class OracleAgent(Agent):
    name = "oracle"

    def __init__(self, task: TaskSpec) -> None:
        super().__init__()
        if task.solution is None:
            raise PolicyError(f"task {task.id!r} has no reference solution for the oracle to replay")
        self._actions = list(task.solution)

    async def act(self, observation: Observation) -> Action:
        return self._actions.pop(0) if self._actions else Action(text="")


class NullAgent(Agent):
    name = "null"

    async def act(self, observation: Observation) -> Action:
        return Action(text="")


_TOKEN = re.compile(r"[A-Za-z0-9_@.\-]{3,}")


class RandomAgent(Agent):
    name = "random"

    def __init__(self, seed: int, *, stop_p: float = 0.15) -> None:
        super().__init__()
        self._rng = random.Random(seed)
        self._stop_p = stop_p
        self._tools: list[dict[str, Any]] = []
        self._words: list[str] = ["1"]
        self._step = 0

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        self._tools = list(info.get("tools", []))
        self._remember(observation)

    def _remember(self, observation: Observation) -> None:
        texts = [observation.text, *(r.content for r in observation.tool_results)]
        for text in texts:
            self._words.extend(_TOKEN.findall(text)[:50])
        del self._words[:-500]

    def _value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return self._rng.choice(schema["enum"])
        if "anyOf" in schema:
            return self._value(self._rng.choice(schema["anyOf"]))
        kind = schema.get("type", "string")
        if kind == "integer":
            return self._rng.randint(0, 20)
        if kind == "number":
            return round(self._rng.uniform(0, 200), 2)
        if kind == "boolean":
            return self._rng.random() < 0.5
        if kind == "array":
            return [self._value(schema.get("items", {})) for _ in range(self._rng.randint(0, 2))]
        if kind == "object":
            return {}
        return self._rng.choice(self._words)

    async def act(self, observation: Observation) -> Action:
        self._remember(observation)
        self._step += 1
        if not self._tools or self._rng.random() < self._stop_p:
            return Action(text=self._rng.choice(self._words))
        fn = self._rng.choice(self._tools)["function"]
        params = fn.get("parameters", {})
        required = set(params.get("required", []))
        args = {name: self._value(prop) for name, prop in params.get("properties", {}).items()
                if name in required or self._rng.random() < 0.5}
        return Action(tool_calls=(ToolCall(id=f"call_{self._step}", name=fn["name"], arguments=json.dumps(args)),))


class OracleFactory:
    def create(self, task: TaskSpec) -> Agent:
        return OracleAgent(task)

    def describe(self) -> dict[str, Any]:
        return {"agent": "oracle"}

    async def aclose(self) -> None:
        return None


class NullFactory:
    def create(self, task: TaskSpec) -> Agent:
        return NullAgent()

    def describe(self) -> dict[str, Any]:
        return {"agent": "null"}

    async def aclose(self) -> None:
        return None


class RandomFactory:
    def __init__(self, seed: int = 0, stop_p: float = 0.15) -> None:
        self.seed, self.stop_p = seed, stop_p

    def create(self, task: TaskSpec) -> Agent:
        digest = int(task.hash.removeprefix("sha256:")[:12], 16)
        return RandomAgent(self.seed ^ digest, stop_p=self.stop_p)

    def describe(self) -> dict[str, Any]:
        return {"agent": "random", "seed": self.seed, "stop_p": self.stop_p}

    async def aclose(self) -> None:
        return None
