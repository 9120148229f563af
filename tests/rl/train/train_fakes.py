"""Helpers of the trainer tests: a text-scoring env, a flaky env builder, tasks, a tiny-model config."""

from __future__ import annotations

from typing import Any, Literal

from envgym.env import Env, StepResult
from envgym.errors import EnvError
from envgym.registry import register_verifier
from envgym.rl.train.config import build_config
from envgym.task import TaskSpec
from envgym.types import Action, FrozenModel, Observation, Verdict
from envgym.verify import VerifyContext

ENV_ID = "test/vowels-v1"


class VowelShareSpec(FrozenModel):
    """A verifier kind of these tests: the reply's share of vowels (a signal a random tiny model varies on)."""

    type: Literal["vowel_share"] = "vowel_share"


async def vowel_share(spec: VowelShareSpec, ctx: VerifyContext) -> Verdict:
    letters = [c for c in (ctx.final_answer or "").lower() if c.isalpha()]
    score = sum(c in "aeiou" for c in letters) / len(letters) if letters else 0.0
    return Verdict(score=score, passed=score > 0.5)


register_verifier("vowel_share", VowelShareSpec, vowel_share)  # as a plug-in's hook registers its kind


class VowelEnv(Env):
    """One turn: the reply's reward is its share of vowels (a signal a random tiny model varies on)."""

    def __init__(self) -> None:
        super().__init__()
        self._text = ""

    async def reset(self, *, task: TaskSpec | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        return Observation(text=self.task.instruction), {"tools": [], "policy": "Answer briefly."}

    async def step(self, action: Action) -> StepResult:
        self._text = action.text or ""
        return StepResult(Observation(text="done"), 0.0, True, False, {})  # the kernel grades it

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=[], final_answer=self._text)


class BrokenEnv(VowelEnv):
    async def reset(self, **kwargs: Any) -> tuple[Observation, dict[str, Any]]:
        raise EnvError("the environment's backing service is down")


class PickyEnv(VowelEnv):
    """Cannot start the tasks whose instruction says "broken" (however often it is rebuilt)."""

    async def reset(self, *, task: TaskSpec | None = None, **kwargs: Any) -> tuple[Observation, dict[str, Any]]:
        if task is not None and "broken" in task.instruction:
            raise EnvError("this task's fixture cannot be loaded")
        return await super().reset(task=task, **kwargs)


class FlakyBuilder:
    """Builds a broken env for the first ``failures`` builds, healthy ones after."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.built = 0

    def __call__(self, env_id: str) -> Env:
        self.built += 1
        return BrokenEnv() if self.built <= self.failures else VowelEnv()


def vowel_tasks(n: int = 4) -> list[TaskSpec]:
    return [TaskSpec(id=f"vowels-{i}", env_id=ENV_ID, instruction=f"Say something, number {i}.",
                     verifiers=({"type": "vowel_share"},), split="train") for i in range(n)]


def tiny_config(**overrides: Any):
    values = {"model": "tiny", "suite": "unused", "group_size": 2, "groups_per_step": 2, "steps": 2,
              "lr": 5e-3, "max_new_tokens": 6, "concurrency": 4, "gen_batch": 1, "prefix_cache": 0,
              "checkpoint_every": 1, "micro_batch_size": 4, "max_turns": 1, **overrides}
    return build_config(values)
