"""Deterministic replay of this family's episodes: the kernel's :func:`envgym.plugin.timed.replay`, with the env built
from the task's scenario (``timed/kitchen-v1`` -> ``TimedEnv("kitchen")``), so it works without the registry::

    verdict, timeline = await replay(task, actions, seed=0, charges=[2.0, 2.0, 2.0])
    verdict = await regrade(task, trajectory)      # charges from the verdict's timeline evidence
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from envgym.plugin import Action, EnvError, TaskSpec, Trajectory, Verdict
from envgym.plugin.timed import Timeline, recorded_charges
from envgym.plugin.timed import regrade as kernel_regrade
from envgym.plugin.timed import replay as kernel_replay
from envgym_timed.env import TimedEnv

__all__ = ["recorded_charges", "regrade", "replay", "scenario_of"]


def scenario_of(task: TaskSpec) -> str:
    """``timed/kitchen-v1`` -> ``kitchen``."""
    family, _, rest = task.env_id.partition("/")
    if family != "timed":
        raise EnvError(f"task {task.id!r} is not a timed task ({task.env_id})")
    return rest.rsplit("-v", 1)[0]


async def replay(task: TaskSpec, actions: Sequence[Action], *, seed: int | None = 0,
                 charges: Sequence[float] | None = None, thinking: Any = None) -> tuple[Verdict, Timeline]:
    """Run ``actions`` in a fresh env (see :func:`envgym.plugin.timed.replay`)."""
    return await kernel_replay(task, actions, seed=seed, charges=charges, thinking=thinking,
                               env=functools.partial(TimedEnv, scenario_of(task)))


async def regrade(task: TaskSpec, trajectory: Trajectory) -> Verdict:
    """Grade a recorded run again, without the agent, from its actions and recorded thinking charges."""
    scenario_of(task)
    return await kernel_regrade(task, trajectory, env=functools.partial(TimedEnv, scenario_of(task)))
