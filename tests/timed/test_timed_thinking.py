"""Thinking costs time: each policy advances the world's clock as documented; real-time mode follows a clock."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from timed_helpers import BACKOFFICE_WORLD, call, timed_task

import envgym
from envgym.agent import Agent
from envgym.clock import SimClock
from envgym.rollout import run_episode
from envgym.timed.thinking import (
    FixedThinkingCost,
    RecordedThinkingCost,
    ThinkingSample,
    TokenThinkingCost,
    WallThinkingCost,
    thinking_policy,
)
from envgym.types import Action, Usage
from envgym_timed.env import TimedEnv

TICK = call("list_jobs")


def test_policies_compute_their_cost_from_the_sample():
    usage = Usage(prompt_tokens=1000, completion_tokens=250)
    sample = ThinkingSample(step=1, wall_s=3.5, usage=usage)
    assert thinking_policy("none").cost(sample) == 0
    assert FixedThinkingCost(seconds=4).cost(sample) == 4
    assert TokenThinkingCost(seconds_per_token=0.02, seconds_per_prompt_token=0.001, base_s=1).cost(sample) == 7
    assert TokenThinkingCost(base_s=1).cost(ThinkingSample(step=1, wall_s=0, usage=None)) == 1
    assert WallThinkingCost(scale=2).cost(sample) == 7
    assert RecordedThinkingCost(charges=(1, 9)).cost(sample) == 9
    assert RecordedThinkingCost(charges=(1,)).cost(sample) == 0


def test_policies_parse_from_short_strings_and_dicts():
    assert thinking_policy(None) == FixedThinkingCost(seconds=2)
    assert thinking_policy("fixed:5") == FixedThinkingCost(seconds=5)
    assert thinking_policy("tokens:0.05") == TokenThinkingCost(seconds_per_token=0.05)
    assert thinking_policy({"type": "wall", "scale": 0.5}) == WallThinkingCost(scale=0.5)
    with pytest.raises(ValidationError):
        thinking_policy("telepathy")


async def test_fixed_policy_charges_every_step_and_records_it():
    env = TimedEnv("kitchen", thinking="fixed:3")
    await env.reset(task=timed_task("kitchen"))
    for expected in (3, 6, 9):
        obs, *_ = await env.step(TICK)
        assert obs.time_s == expected and obs.thinking_s == 3
    assert "(+3.0s thinking)" in obs.text
    assert env.timeline().thinking_charges() == [3, 3, 3]


async def test_token_policy_reads_usage_from_the_step_or_an_attached_source():
    env = TimedEnv("kitchen", thinking={"type": "tokens", "seconds_per_token": 0.1})
    await env.reset(task=timed_task("kitchen"))
    obs, *_ = await env.step(TICK, usage=Usage(completion_tokens=40))
    assert obs.thinking_s == 4
    spent = {"usage": Usage(completion_tokens=100)}
    env.attach_usage(lambda: spent["usage"])
    spent["usage"] = Usage(completion_tokens=130)      # the agent generated 30 tokens for this action
    obs, *_ = await env.step(TICK)
    assert obs.thinking_s == 3 and obs.time_s == 7
    obs, *_ = await env.step(TICK)                       # nothing generated
    assert obs.thinking_s == 0


async def test_wall_policy_measures_the_env_clock_between_steps():
    clock = SimClock()
    env = TimedEnv("kitchen", thinking="wall:2", clock=clock)
    await env.reset(task=timed_task("kitchen"))
    clock.advance(1.5)                                   # the agent thinks for 1.5 s of wall time
    obs, *_ = await env.step(TICK)
    assert obs.thinking_s == 3 and obs.time_s == 3
    obs, *_ = await env.step(TICK)
    assert obs.thinking_s == 0


async def test_thinking_time_lets_the_world_move_before_the_action():
    events = [{"id": "courier", "at": 10, "effects": [{"message": {"from": "courier", "text": "at the door"}}]}]
    env = TimedEnv("assistant", thinking="fixed:30")
    await env.reset(task=timed_task("assistant", events=events))
    obs, *_ = await env.step(call("list_calendar"))
    assert [n.clock for n in obs.notifications] == ["09:00:10"]


async def test_real_time_mode_follows_the_clock_and_really_waits():
    clock = SimClock()
    task = timed_task("backoffice", world=BACKOFFICE_WORLD, latency={"get_quote": {"dist": "fixed", "seconds": 60}})
    env = TimedEnv("backoffice", realtime=True, speed=10, clock=clock)
    await env.reset(task=task)
    clock.advance(2)                                     # 2 s of wall time = 20 s of world time
    obs, *_ = await env.step(call("get_quote", supplier="acme", item="bolts"))
    assert obs.time_s == 20 and obs.thinking_s == 20
    obs, *_ = await env.step(call("wait_for_notification", timeout=600, source="h1"))
    assert obs.time_s == 80 and clock.now() == pytest.approx(8)   # slept 6 s of wall time for 60 s
    assert obs.notifications[0].source == "h1"


class _Talker(Agent):
    """Generates 50 completion tokens per action, then finishes after three list_jobs calls."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = 0

    async def act(self, observation) -> Action:
        self.steps += 1
        self.usage = self.usage + Usage(completion_tokens=50, calls=1)
        return TICK if self.steps <= 3 else Action(text="done")


async def test_attached_usage_reaches_the_env_through_make_and_the_rollout_loop():
    task = timed_task("kitchen")
    agent = _Talker()
    async with envgym.make("timed/kitchen-v1", thinking="tokens:0.1") as env:
        env.attach_usage(lambda: agent.usage)      # forwarded through the wrappers to the TimedEnv
        trajectory = await run_episode(env, agent, task, seed=0)
    assert [s.observation.thinking_s for s in trajectory.steps] == [5, 5, 5, 5]
    assert trajectory.steps[-1].observation.time_s == 20
