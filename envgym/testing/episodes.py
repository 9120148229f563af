"""Driving one episode by hand in a test: :func:`play` steps a fresh env through a list of actions.

Unlike :func:`envgym.rollout.run_episode` there is no agent, deadline or trajectory: the test sees each
raw :class:`~envgym.env.StepResult`, including the verdict the kernel's grading put in the last one's
``info["verdict"]``.
"""

from __future__ import annotations

import envgym
from envgym.env import StepResult
from envgym.task import TaskSpec
from envgym.types import Action, Observation


async def play(env_id: str, task: TaskSpec, actions: list[Action]) -> tuple[StepResult, list[Observation]]:
    """Run ``actions`` in a fresh episode of ``env_id``; return the last step's result and every observation.

    Raises AssertionError when the actions run out before the episode ends.
    """
    env = envgym.make(env_id)
    try:
        await env.reset(task=task)
        observations = []
        for action in actions:
            result = await env.step(action)
            observations.append(result.observation)
            if result.terminated or result.truncated:
                return result, observations
        raise AssertionError("the actions did not end the episode")
    finally:
        await env.close()
