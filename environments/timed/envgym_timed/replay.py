"""Deterministic replay: re-run a timed episode from its actions, and re-grade a recorded run.

The same task, seed, actions and thinking charges give the same timeline (nothing in a timed world reads
the wall clock outside real-time mode, and latencies are drawn from a per-episode seeded generator in
call order). So a recorded run is re-graded without the agent by feeding its actions back with the
thinking charges it was given (the ``recorded`` thinking policy)::

    verdict, timeline = await replay(task, actions, seed=0, charges=[2.0, 2.0, 2.0])
    verdict = await regrade(task, trajectory)      # charges from the verdict's timeline evidence
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envgym.errors import EnvError
from envgym.task import TaskSpec
from envgym.timed.thinking import RecordedThinkingCost
from envgym.timed.timeline import Timeline
from envgym.trajectory import Trajectory
from envgym.types import Action, Verdict
from envgym_timed.env import TimedEnv


def scenario_of(task: TaskSpec) -> str:
    """``timed/kitchen-v1`` -> ``kitchen``."""
    family, _, rest = task.env_id.partition("/")
    if family != "timed":
        raise EnvError(f"task {task.id!r} is not a timed task ({task.env_id})")
    return rest.rsplit("-v", 1)[0]


async def replay(task: TaskSpec, actions: Sequence[Action], *, seed: int | None = 0,
                 charges: Sequence[float] | None = None, thinking: Any = None) -> tuple[Verdict, Timeline]:
    """Run ``actions`` in a fresh env; returns the verdict and the timeline.

    ``charges`` replays recorded thinking charges step by step; otherwise ``thinking`` (a policy, default
    the env's) charges them anew. Actions after the episode ends are ignored; an episode the actions do
    not end is graded as it stands.
    """
    policy = RecordedThinkingCost(charges=tuple(charges)) if charges is not None else thinking
    env = TimedEnv(scenario_of(task), thinking=policy)
    try:
        await env.reset(task=task, seed=seed)
        for action in actions:
            _, _, terminated, truncated, _ = await env.step(action)
            if terminated or truncated:
                break
        verdict = await env.verify()  # the kernel's grading, on what the episode left (ended or not)
        return verdict, env.timeline()
    finally:
        await env.close()


def recorded_charges(trajectory: Trajectory) -> list[float] | None:
    """The thinking charges a run was given: from its observations, or its verdict's timeline evidence."""
    charges = [getattr(step.observation, "thinking_s", None) for step in trajectory.steps]
    if charges and all(c is not None for c in charges):
        return [float(c) for c in charges if c is not None]
    evidence = trajectory.verdict.evidence if trajectory.verdict else {}
    timeline = evidence.get("timeline")
    if timeline is None:
        return None
    return Timeline.model_validate(timeline).thinking_charges()


async def regrade(task: TaskSpec, trajectory: Trajectory) -> Verdict:
    """Grade a recorded run again, without the agent, from its actions and recorded thinking charges."""
    if trajectory.task_hash != task.hash:
        raise EnvError(f"trajectory of {trajectory.task_id!r} ({trajectory.task_hash}) is not of task {task.id!r}")
    charges = recorded_charges(trajectory)
    if charges is None:
        raise EnvError("the trajectory records no thinking charges (no timed verdict, no timed observations)")
    verdict, _ = await replay(task, [s.action for s in trajectory.steps], seed=trajectory.seed, charges=charges)
    return verdict
