"""A fake environment for tests of code around envs (agents, wrappers, rollouts, pools, plug-in glue).

:class:`CountdownEnv` has no tools and no resources: the episode ends when the agent sends a final message
(terminated) or after ``task.metadata["steps"]`` steps, default 3 (truncated). Like every family it never
grades itself: :meth:`CountdownEnv.verify_context` reports the final answer and the kernel's
:class:`~envgym.wrappers.Grading` wrapper (added by ``make``) runs the task's verifiers on it.
:func:`countdown_tasks` makes tasks for it whose answer verifier expects ``"done"`` (the reference
solution says so)::

    with envgym.registry.isolated():
        envgym.register("test/countdown-v1", "envgym.testing:CountdownEnv")
        env = envgym.make("test/countdown-v1")
        trajectory = await run_episode(env, ScriptedAgent([Action.say("done")]), countdown_tasks(1)[0])
"""

from __future__ import annotations

from typing import Any

from envgym.env import Env, StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Observation
from envgym.verify import VerifyContext
from envgym.verify.spec import AnswerSpec

COUNTDOWN_ID = "test/countdown-v1"


def countdown_tasks(n: int, *, steps: int = 3, env_id: str = COUNTDOWN_ID) -> list[TaskSpec]:
    """``n`` tasks ``countdown-0000``... for :class:`CountdownEnv`: answer ``"done"`` within ``steps`` steps."""
    return [TaskSpec(id=f"countdown-{i:04d}", env_id=env_id, instruction=f"Task {i}: say done.",
                     metadata={"steps": steps}, verifiers=(AnswerSpec(kind="exact", expected="done"),),
                     solution=(Action.say("done"),))
            for i in range(n)]


class CountdownEnv(Env):
    """No tools: a final message ends the episode; ``task.metadata["steps"]`` steps (default 3) truncate it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._left = 0
        self._answer: str | None = None

    async def reset(self, *, task: TaskSpec | str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        self.task = self.choose_task(task, seed, options)
        self._left = int(self.task.metadata.get("steps", 3))
        self._answer = None
        return Observation(text=self.task.instruction), {"task_id": self.task.id, "split": self.task.split,
                                                         "tools": []}

    async def step(self, action: Action) -> StepResult:
        self._left -= 1
        if action.is_final:
            self._answer = action.text
            return StepResult(Observation(text="ok"), 0.0, True, False, {})
        if self._left <= 0:
            return StepResult(Observation(text="out of steps"), 0.0, False, True, {})
        error = "this env has no tools; answer with a message"
        return StepResult(Observation(last_action_error=error), 0.0, False, False, {})

    async def verify_context(self) -> VerifyContext:
        return VerifyContext(calls=[], final_answer=self._answer, task=self.task)
