import json
import random

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from vector_fakes import ChaosEnv, fake_tasks, made

import envgym
from envgym.errors import ResetNeeded
from envgym.gym import observation_text
from envgym.types import Action
from envgym.vector import AsyncVectorEnv, GymnasiumVectorEnv

N = 4
ACTIONS = ['{"name": "list_notes"}', '{"name": "get_note", "arguments": {"note_id": 2}}',
           '{"name": "delete_note", "arguments": {"note_id": 1}}',
           '{"name": "delete_note", "arguments": {"note_id": 2}}',
           '{"name": "add_note", "arguments": {"title": "gym"}}']


def _actions(rng):
    """One batch of actions: mostly tool calls, sometimes the final message that ends an episode (rarely in
    sub-env 0, so its episodes run into the step limit and are truncated)."""
    return [("Done." if rng.random() < (0.02 if i == 0 else 0.2) else rng.choice(ACTIONS)) for i in range(N)]


def _plain(value):
    """Infos as comparable plain data (numpy arrays -> lists, recursively)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _reference(mode):
    return SyncVectorEnv([lambda: gymnasium.make("envgym/test-notes-v1")] * N, autoreset_mode=mode)


def _rollout(envs, mode, steps=80):
    """Drive a Gymnasium vector env with seeded actions; return everything it said."""
    rng = random.Random(7)
    said = [envs.reset(seed=11)]
    for _ in range(steps):
        said.append(envs.step(_actions(rng)))
        if mode is AutoresetMode.DISABLED:
            ended = said[-1][2] | said[-1][3]
            if ended.any():
                said.append(envs.reset(options={"reset_mask": ended}))
    return [tuple(_plain(x) for x in result) for result in said]


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_facade_matches_sync_vector_env(mode):
    reference, ours = _reference(mode), GymnasiumVectorEnv("test/notes-v1", num_envs=N, autoreset_mode=mode)
    try:
        expected, got = _rollout(reference, mode), _rollout(ours, mode)
    finally:
        reference.close()
        ours.close()
    assert len(got) == len(expected)
    for step, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert g == e, f"step {step} differs"
    steps = [s for s in expected if len(s) == 5]
    assert any(any(s[2]) for s in steps) and any(any(s[3]) for s in steps)  # both kinds of episode end occur
    assert any(s[1][i] == 1.0 for s in steps for i in range(N))
    if mode is AutoresetMode.SAME_STEP:
        assert any("final_obs" in s[4] for s in steps)


@pytest.mark.parametrize("mode", list(AutoresetMode))
async def test_async_core_matches_sync_vector_env(mode):
    reference = _reference(mode)
    try:
        expected = _rollout(reference, mode, steps=40)
    finally:
        reference.close()
    rng = random.Random(7)
    async with AsyncVectorEnv([lambda: envgym.make("test/notes-v1")] * N, autoreset_mode=mode) as envs:
        obs, infos = await envs.reset(seed=11)
        got = [([observation_text(o) for o in obs], _plain(infos))]
        for _ in range(40):
            obs, rewards, terminations, truncations, infos = await envs.step(_actions(rng))
            got.append(([observation_text(o) for o in obs], rewards.tolist(), terminations.tolist(),
                        truncations.tolist(), _plain(infos)))
            if mode is AutoresetMode.DISABLED and (terminations | truncations).any():
                obs, infos = await envs.reset(options={"reset_mask": terminations | truncations})
                got.append(([observation_text(o) for o in obs], _plain(infos)))
    for step, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert g[:4] == e[:4], f"step {step} differs"
        info_keys = set(g[-1]) - {"final_obs"}
        assert info_keys == set(e[-1]) - {"final_obs"}
        if "final_obs" in e[-1]:
            assert [None if o is None else observation_text(o) for o in g[-1]["final_obs"]] == e[-1]["final_obs"]


async def test_sub_envs_step_concurrently_and_autoreset_next_step():
    ChaosEnv.reset_counters()
    tasks = fake_tasks(1, steps=2)
    async with AsyncVectorEnv([lambda: made(delay=0.01, tasks=tasks)] * 5) as envs:
        await envs.reset()
        _, rewards, terminations, _, _ = await envs.step([Action.say("a")] * 5)
        assert ChaosEnv.max_stepping == 5 and not terminations.any()
        _, rewards, terminations, _, infos = await envs.step([Action.say("b")] * 5)
        assert terminations.all() and rewards.tolist() == [1.0] * 5 and infos["_verdict"].all()
        obs, rewards, terminations, _, infos = await envs.step([Action.say("c")] * 5)  # the autoreset step
        assert not terminations.any() and rewards.tolist() == [0.0] * 5 and [o.text for o in obs] == ["task 0"] * 5
    assert ChaosEnv.open == 0


async def test_disabled_autoreset_refuses_to_step_an_ended_env():
    tasks = fake_tasks(1, steps=1)
    async with AsyncVectorEnv([made] * 2, autoreset_mode="Disabled") as envs:
        await envs.reset(options={"task": tasks[0]})
        await envs.step([Action.say("a")] * 2)
        with pytest.raises(ResetNeeded, match=r"\[0, 1\]"):
            await envs.step([Action.say("a")] * 2)
        await envs.reset(options={"task": tasks[0], "reset_mask": np.array([True, True])})
        *_, infos = await envs.step([Action.say("a")] * 2)
        assert infos["_verdict"].all()


async def test_a_crashing_sub_env_lets_the_others_finish_then_raises():
    class Crashing(ChaosEnv):
        async def step(self, action):
            raise RuntimeError("boom")

    envs = AsyncVectorEnv([lambda: ChaosEnv(delay=0.01), Crashing])
    try:
        await envs.reset(options={"task": fake_tasks(1)[0]})
        with pytest.raises(RuntimeError, match="boom"):
            await envs.step(["a", "b"])
        assert ChaosEnv.stepping == 0  # the healthy env's step finished, it was not abandoned mid-call
    finally:
        await envs.close()


def test_facade_is_a_gymnasium_vector_env():
    envs = GymnasiumVectorEnv("test/notes-v1", num_envs=2)
    try:
        assert isinstance(envs, gymnasium.vector.VectorEnv) and envs.num_envs == 2
        obs, infos = envs.reset(seed=0)
        assert all(isinstance(json.loads(o), dict) for o in obs) and infos["_tools"].all()
        obs, *_ = envs.step(['{"name": "list_notes"}'] * 2)
        assert json.loads(obs[0])["tool_results"][0]["name"] == "list_notes"
    finally:
        envs.close()
    assert envs.closed
