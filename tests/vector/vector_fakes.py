"""Fakes for the vector layer: envs and agents that count their lifetimes and crash or hang on cue.

``FakeSandbox`` / ``ChaosEnv`` count what is open, so a test can prove nothing is left behind. A
``ChaosEnv`` draws its misbehaviour from a seeded ``random.Random``; episodes end after ``steps_for(task)``
steps with a passing verdict. Hangs are real sleeps that a deadline (or cancellation) must interrupt.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, ClassVar

from envgym.agent import Agent
from envgym.env import Env, StepResult
from envgym.errors import PolicyError
from envgym.task import SuiteTasks, TaskSpec
from envgym.types import Action, Limits, Observation, Verdict
from envgym.verify import VerifyContext
from envgym.verify.spec import AnswerSpec
from envgym.wrappers import Grading, OrderEnforcing, TimeLimit

PASS = Verdict(score=1.0, passed=True)
FAIL = Verdict(score=0.0, passed=False)
HANG_S = 3600.0


def fake_tasks(n: int, *, steps: int = 3, step_timeout_s: float | None = 120.0,
               episode_timeout_s: float | None = 300.0, env_id: str = "test/chaos-v1") -> list[TaskSpec]:
    return [TaskSpec(id=f"t{i:04d}", env_id=env_id, instruction=f"task {i}", metadata={"steps": steps},
                     verifiers=(AnswerSpec(kind="exact", expected="done"),),
                     limits=Limits(max_steps=1000, step_timeout_s=step_timeout_s, episode_timeout_s=episode_timeout_s))
            for i in range(n)]


class FakeSandbox:
    running: ClassVar[int] = 0

    def __init__(self) -> None:
        self.up = False

    async def start(self) -> None:
        await asyncio.sleep(0)
        self.up = True
        FakeSandbox.running += 1

    async def stop(self) -> None:
        if self.up:
            self.up = False
            FakeSandbox.running -= 1


class ChaosEnv(Env):
    """A fake env; with ``p_crash`` / ``p_hang`` > 0 it raises or hangs in reset, step or close at random."""

    created: ClassVar[int] = 0
    open: ClassVar[int] = 0
    max_stepping: ClassVar[int] = 0
    stepping: ClassVar[int] = 0

    def __init__(self, *, seed: int = 0, p_crash: float = 0.0, p_hang: float = 0.0, delay: float = 0.0,
                 tasks: list[TaskSpec] | None = None) -> None:
        super().__init__()
        self.task_source = SuiteTasks(tasks=tasks or [])  # what reset() without a task draws from
        self.rng = random.Random(seed)
        self.p_crash, self.p_hang, self.delay = p_crash, p_hang, delay
        self.sandbox = FakeSandbox()
        self.closed = False
        self.remaining = 0
        ChaosEnv.created += 1
        ChaosEnv.open += 1

    @classmethod
    def reset_counters(cls) -> None:
        cls.created = cls.open = cls.max_stepping = cls.stepping = 0
        FakeSandbox.running = 0

    async def _misbehave(self, where: str) -> None:
        draw = self.rng.random()
        if draw < self.p_crash:
            raise RuntimeError(f"{where} crashed")
        if draw < self.p_crash + self.p_hang:
            await asyncio.sleep(HANG_S)

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        if not self.sandbox.up:
            await self.sandbox.start()
        await self._misbehave("reset")
        self.remaining = self.task.metadata["steps"]
        return Observation(text=self.task.instruction), {"task_id": self.task.id}

    async def step(self, action: Action) -> StepResult:
        ChaosEnv.stepping += 1
        ChaosEnv.max_stepping = max(ChaosEnv.max_stepping, ChaosEnv.stepping)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            await self._misbehave("step")
        finally:
            ChaosEnv.stepping -= 1
        self.remaining -= 1
        if self.remaining <= 0:
            return StepResult(Observation(text="end"), 0.0, True, False, {})
        return StepResult(Observation(text=f"{self.remaining} to go"), 0.0, False, False, {})

    async def verify_context(self) -> VerifyContext:  # an episode it ended passes; one cut short fails
        return VerifyContext(calls=[], final_answer="done" if self.remaining <= 0 else "")

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        ChaosEnv.open -= 1
        await self.sandbox.stop()
        await self._misbehave("close")


class ChaosAgent(Agent):
    """Says "next" (and finally nothing) unless it crashes or hangs; counts open agents."""

    open: ClassVar[int] = 0

    def __init__(self, rng: random.Random | None = None, *, p_crash: float = 0.0, p_hang: float = 0.0,
                 delay: float = 0.0) -> None:
        super().__init__()
        self.rng = rng or random.Random(0)
        self.p_crash, self.p_hang, self.delay = p_crash, p_hang, delay
        ChaosAgent.open += 1

    async def act(self, observation: Observation) -> Action:
        if self.delay:
            await asyncio.sleep(self.delay)
        draw = self.rng.random()
        if draw < self.p_crash:
            raise PolicyError("model endpoint crashed")
        if draw < self.p_crash + self.p_hang:
            await asyncio.sleep(HANG_S)
        return Action.say("next")

    async def close(self) -> None:
        ChaosAgent.open -= 1


class ChaosFactory:
    """An AgentFactory of ChaosAgents sharing one seeded rng; ``p_refuse``: ``create`` itself fails."""

    def __init__(self, seed: int = 0, *, p_refuse: float = 0.0, **agent_kwargs: Any) -> None:
        self.rng = random.Random(seed)
        self.p_refuse = p_refuse
        self.agent_kwargs = agent_kwargs

    def create(self, task: TaskSpec) -> Agent:
        if self.rng.random() < self.p_refuse:
            raise PolicyError("no agent today")
        return ChaosAgent(self.rng, **self.agent_kwargs)

    def describe(self) -> dict[str, Any]:
        return {"agent": "chaos"}

    async def aclose(self) -> None:
        pass


def made(**kwargs: Any) -> Env:
    """A :class:`ChaosEnv` wrapped as ``envgym.make`` wraps an env (the kernel grades its episodes)."""
    return OrderEnforcing(Grading(TimeLimit(ChaosEnv(**kwargs))))
