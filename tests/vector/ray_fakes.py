"""Envs for the Ray tests, built on the hosts (these functions travel by value: the hosts cannot import
this test folder). ``SleepyEnv`` is the kernel's countdown env whose every step takes
``task.metadata["sleep"]`` seconds; ``slow_host`` makes one host's steps slower by a factor."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.testing import CountdownEnv
from envgym.types import Action, Limits
from envgym.verify.spec import AnswerSpec
from envgym.wrappers import Grading, OrderEnforcing, TimeLimit

SLEEPY_ID = "test/sleepy-v1"


def sleepy_tasks(n: int, *, sleep: float = 0.05, steps: int = 2, prefix: str = "sleepy") -> list[TaskSpec]:
    """Tasks the oracle solves at its first step: ``say done`` after ``sleep`` seconds."""
    return [TaskSpec(id=f"{prefix}-{i:04d}", env_id=SLEEPY_ID, instruction=f"Task {i}: say done.",
                     metadata={"steps": steps, "sleep": sleep}, verifiers=(AnswerSpec(kind="exact", expected="done"),),
                     solution=(Action.say("done"),), limits=Limits(max_steps=10, step_timeout_s=60,
                                                                   episode_timeout_s=120))
            for i in range(n)]


class SleepyEnv(CountdownEnv):
    slow_factor: float = 1.0

    async def step(self, action: Action) -> StepResult:
        await asyncio.sleep(float(self.task.metadata.get("sleep", 0)) * self.slow_factor)
        return await super().step(action)


def make_sleepy(env_id: str, **kwargs: Any) -> Env:
    return OrderEnforcing(Grading(TimeLimit(SleepyEnv(**kwargs), max_steps=10)))


class SlowOn:
    """``make_env`` whose envs are ``factor`` times slower on the host whose node id starts with ``node``."""

    def __init__(self, node: str, factor: float) -> None:
        self.node, self.factor = node, factor

    def __call__(self, env_id: str) -> Env:
        import ray

        env = SleepyEnv()
        if ray.get_runtime_context().get_node_id().startswith(self.node):
            env.slow_factor = self.factor
        return OrderEnforcing(Grading(TimeLimit(env, max_steps=10)))


def host_pid() -> int:
    return os.getpid()
