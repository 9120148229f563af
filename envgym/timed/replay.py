"""Deterministic replay: re-run a timed episode from its actions, and re-grade a recorded run, for any timed env.

The same task, seed, actions and thinking charges give the same timeline (nothing in a timed world reads
the wall clock outside real-time mode, and latencies are drawn from a per-episode seeded generator in
call order). So a recorded run is re-graded without the agent by feeding its actions back with the
thinking charges it was given (the ``recorded`` thinking policy). Works for every
:class:`~envgym.timed.env.TimedWorldEnv`: by default the env is built from the registry by the task's
``env_id`` (``make(env_id, thinking=..., max_virtual_time=...)``); pass ``env=`` (a callable taking those
two keyword arguments, such as the env class or a ``functools.partial`` of it) for one that is not
registered. A run's virtual-time budget comes back from its timeline, so a budget-truncated run replays
truncated at the same time::

    verdict, timeline = await replay(task, actions, seed=0, charges=[2.0, 2.0, 2.0])
    verdict = await regrade(task, trajectory)      # charges from the observations or the verdict's timeline
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from envgym.compose import make
from envgym.errors import EnvError
from envgym.task import TaskSpec
from envgym.timed.env import TimedWorldEnv
from envgym.timed.thinking import RecordedThinkingCost
from envgym.timed.timeline import Timeline
from envgym.trajectory import Trajectory
from envgym.types import Action, Verdict

EnvFactory = Callable[..., TimedWorldEnv]
"""Builds a fresh timed env from the keyword arguments ``thinking`` and ``max_virtual_time``."""


def _registered(task: TaskSpec) -> EnvFactory:
    def build(**kwargs: Any) -> TimedWorldEnv:
        env = make(task.env_id, **kwargs).unwrapped
        if not isinstance(env, TimedWorldEnv):
            raise EnvError(f"{task.env_id} is not a timed env (a TimedWorldEnv): it cannot be replayed")
        return env

    return build


async def replay(task: TaskSpec, actions: Sequence[Action], *, seed: int | None = 0,
                 charges: Sequence[float] | None = None, thinking: Any = None,
                 env: EnvFactory | None = None, max_virtual_time: float | None = None) -> tuple[Verdict, Timeline]:
    """Run ``actions`` in a fresh env; returns the verdict and the timeline.

    ``charges`` replays recorded thinking charges step by step; otherwise ``thinking`` (a policy, default
    the env's) charges them anew; ``max_virtual_time`` is the run's budget. Actions after the episode ends
    are ignored; an episode the actions do not end is graded as it stands.
    """
    policy = RecordedThinkingCost(charges=tuple(charges)) if charges is not None else thinking
    timed = (env or _registered(task))(thinking=policy, max_virtual_time=max_virtual_time)
    try:
        await timed.reset(task=task, seed=seed)
        for action in actions:
            _, _, terminated, truncated, _ = await timed.step(action)
            if terminated or truncated:
                break
        verdict = await timed.verify()  # the kernel's grading, on what the episode left (ended or not)
        return verdict, timed.timeline()
    finally:
        await timed.close()


def recorded_charges(trajectory: Trajectory) -> list[float] | None:
    """The thinking charges a run was given: from its observations, or its verdict's timeline evidence."""
    charges = [getattr(step.observation, "thinking_s", None) for step in trajectory.steps]
    if charges and all(c is not None for c in charges):
        return [float(c) for c in charges if c is not None]
    timeline = recorded_timeline(trajectory)
    return None if timeline is None else timeline.thinking_charges()


def recorded_timeline(trajectory: Trajectory) -> Timeline | None:
    """The timeline in a run's verdict evidence (None when it has none)."""
    evidence = trajectory.verdict.evidence if trajectory.verdict else {}
    timeline = evidence.get("timeline")
    return None if timeline is None else Timeline.model_validate(timeline)


async def regrade(task: TaskSpec, trajectory: Trajectory, *, env: EnvFactory | None = None) -> Verdict:
    """Grade a recorded run again, without the agent, from its actions and recorded thinking charges."""
    if trajectory.task_hash != task.hash:
        raise EnvError(f"trajectory of {trajectory.task_id!r} ({trajectory.task_hash}) is not of task {task.id!r}")
    charges = recorded_charges(trajectory)
    if charges is None:
        raise EnvError("the trajectory records no thinking charges (no timed verdict, no timed observations)")
    timeline = recorded_timeline(trajectory)
    budget = timeline.budget if timeline is not None else None
    verdict, _ = await replay(task, [s.action for s in trajectory.steps], seed=trajectory.seed, charges=charges,
                              env=env, max_virtual_time=budget)
    return verdict
