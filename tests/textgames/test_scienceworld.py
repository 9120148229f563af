"""text/scienceworld-v1 on the real simulator (a JVM): the gold path wins, the JVM is reused, bad input."""

from __future__ import annotations

import pytest

import envgym
from envgym import Action
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.errors import EnvError
from envgym.rollout import run_episode
from envgym.task import load_suite

pytest.importorskip("scienceworld", reason="the scienceworld extra is not installed")
pytestmark = pytest.mark.slow


def suite_task(task_type: str):
    return min((t for t in load_suite("text-scienceworld") if t.initial_state["task_name"] == task_type),
               key=lambda t: len(t.solution or ()))


async def test_gold_path_wins_null_fails_and_one_jvm_serves_every_reset() -> None:
    task = suite_task("find-plant")
    async with envgym.make("text/scienceworld-v1") as env:
        oracle = await run_episode(env, OracleAgent(task), task, seed=0)
        assert oracle.reward == 1.0 and oracle.verdict.passed
        assert oracle.verdict.evidence["scienceworld"]["score"] == 100
        simulator = env.unwrapped._sim
        null = await run_episode(env, NullAgent(), task, seed=0)
        assert null.reward == 0.0 and not null.verdict.passed
        assert env.unwrapped._sim is simulator  # the same JVM, reloaded


async def test_focusing_on_the_wrong_thing_loses_and_ends_the_episode() -> None:
    task = suite_task("find-plant")
    async with envgym.make("text/scienceworld-v1") as env:
        obs, _ = await env.reset(task=task)
        assert "Your task is to find a(n) plant" in obs.text and "This room is called" in obs.text
        assert obs.text.count("Your task is to") == 1
        await env.step(Action.call("act", command="look around"))
        result = await env.step(Action.call("act", command="focus on agent"))
        answer = result.observation.tool_results[0].content
        assert result.terminated, answer
        assert result.info["verdict"].score == 0.0 and result.info["verdict"].evidence["scienceworld"]["lost"]


async def test_unknown_task_type_and_variation_are_env_errors() -> None:
    task = suite_task("find-plant")
    async with envgym.make("text/scienceworld-v1") as env:
        for state in ({"task_name": "levitate", "variation": 0}, {"task_name": "find-plant", "variation": 10_000},
                      {"task_name": "find-plant"}):
            with pytest.raises(EnvError):
                await env.reset(task=task.model_copy(update={"initial_state": state}))


def test_vector_lockstep_facade_plays_two_episodes() -> None:
    import json

    from envgym.vector import GymnasiumVectorEnv

    envs = GymnasiumVectorEnv("text/scienceworld-v1", num_envs=2)
    try:
        observations, _ = envs.reset(seed=0, options={"split": "test"})
        assert all("This room is called" in json.loads(o)["text"] for o in observations)
        look = json.dumps({"name": "act", "arguments": {"command": "look around"}})
        observations, _, terminations, _, _ = envs.step([look, look])
        assert not terminations.any()
        assert all("This room is called" in json.loads(o)["tool_results"][0]["content"] for o in observations)
        _, rewards, terminations, _, _ = envs.step(["I am done.", "I am done."])
        assert terminations.all() and (rewards == 0.0).all()  # graded by the kernel: nothing was won
    finally:
        envs.close()
