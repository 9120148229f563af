"""Deterministic replay: same seed and actions give the same timeline; recorded runs re-grade offline."""

from __future__ import annotations

import envgym
from envgym.agents.baseline import OracleAgent, RandomAgent
from envgym.check import env_tasks
from envgym.clock import SimClock
from envgym.rollout import run_episode
from envgym.trajectory import Trajectory
from envgym.types import Action
from envgym.wrappers import Grading
from envgym_timed.env import TimedEnv
from envgym_timed.replay import recorded_charges, regrade, replay

BACKOFFICE = {t.id: t for t in env_tasks("timed/backoffice-v1")}
ASSISTANT = {t.id: t for t in env_tasks("timed/assistant-v1")}


async def test_same_seed_and_actions_give_the_same_timeline():
    task = BACKOFFICE["backoffice-three-errands-async"]
    first = await replay(task, task.solution, seed=3)
    second = await replay(task, task.solution, seed=3)
    assert first[1] == second[1] and first[0] == second[0]
    other = await replay(task, task.solution, seed=4)
    assert [c.done_at for c in other[1].calls] != [c.done_at for c in first[1].calls]


async def test_random_actions_replay_to_the_same_timeline():
    task = ASSISTANT["assistant-plumber-async"]
    async with envgym.make(task.env_id) as env:
        trajectory = await run_episode(env, RandomAgent(seed=7, stop_p=0.05), task, seed=1)
    assert len(trajectory.steps) > 3
    _, timeline = await replay(task, [s.action for s in trajectory.steps], seed=1)
    assert timeline == envgym_timeline(trajectory)


def envgym_timeline(trajectory: Trajectory):
    from envgym.timed.timeline import Timeline

    return Timeline.model_validate(trajectory.verdict.evidence["timeline"])


async def test_a_recorded_run_regrades_from_json_without_the_agent():
    task = ASSISTANT["assistant-courier-async"]
    async with envgym.make(task.env_id) as env:
        trajectory = await run_episode(env, OracleAgent(task), task, seed=5)
    stored = Trajectory.model_validate_json(trajectory.model_dump_json())   # what a record keeps
    assert not hasattr(stored.steps[0].observation, "thinking_s")
    assert recorded_charges(stored) == [2.0] * len(stored.steps)
    verdict = await regrade(task, stored)
    assert verdict.passed and verdict.criteria == trajectory.verdict.criteria
    original, regraded = trajectory.verdict.evidence, verdict.evidence
    assert regraded["efficiency"] == original["efficiency"]
    assert regraded["timeline"]["thinking_policy"]["type"] == "recorded"
    del regraded["timeline"]["thinking_policy"], original["timeline"]["thinking_policy"]
    assert regraded["timeline"] == original["timeline"]


async def test_a_wall_clock_run_regrades_with_its_recorded_charges():
    task = ASSISTANT["assistant-courier-async"]
    clock = SimClock()
    env = Grading(TimedEnv("assistant", thinking="wall", clock=clock))
    await env.reset(task=task, seed=0)
    info = {}
    for i, action in enumerate(task.solution):
        clock.advance(3000 if i == 3 else 1)   # the agent dawdles before messaging Sam
        _, _, done, _, info = await env.step(action)
    assert done and not info["verdict"].passed   # Sam heard after 10:00
    trajectory = Trajectory(task_id=task.id, task_hash=task.hash, env_id=task.env_id, seed=0,
                            steps=(), outcome="failure", verdict=info["verdict"])
    replayed, timeline = await replay(task, task.solution, seed=0, charges=recorded_charges(trajectory))
    assert replayed.criteria == info["verdict"].criteria and not replayed.passed
    assert replayed.evidence["efficiency"] == info["verdict"].evidence["efficiency"]
    assert timeline.thinking_charges()[3] == 3000


async def test_actions_after_the_end_are_ignored_and_an_open_episode_is_graded():
    task = ASSISTANT["assistant-courier-async"]
    verdict, timeline = await replay(task, [Action(text="done"), *task.solution])
    assert not verdict.passed and len(timeline.steps) == 1
    verdict, _ = await replay(task, task.solution[:1])
    assert not verdict.passed
