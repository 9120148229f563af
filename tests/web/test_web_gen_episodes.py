"""The web generators in real browser episodes, on 8 tasks (every level, both splits): the oracle scores 1,
the null agent 0, and each tampering agent 0 (``envgym check web-shop-gen`` runs the same on 200)."""

from __future__ import annotations

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.generate import generate
from envgym.rollout import run_episode
from envgym.tamper import tamper_agents_for
from envgym.types import Outcome

pytestmark = pytest.mark.browser
SAMPLE = ((11, 1, "train"), (12, 2, "test"), (13, 3, "train"), (14, 3, "test"))


@pytest.mark.parametrize("name,env_id", [("web-shop-gen", "web/shop-v1"), ("web-forum-gen", "web/forum-v1")])
async def test_oracle_passes_null_and_tampering_agents_score_zero(name: str, env_id: str) -> None:
    tasks = [generate(name, seed, level=level, split=split) for seed, level, split in SAMPLE]
    async with envgym.make(env_id) as env:
        for task in tasks:
            oracle = await run_episode(env, OracleAgent(task), task, seed=0)
            assert oracle.outcome is Outcome.SUCCESS and oracle.reward == 1.0, (task.id, oracle.error, oracle.verdict)
            null = await run_episode(env, NullAgent(), task, seed=0)
            assert null.outcome is Outcome.FAILURE and null.reward == 0.0, task.id
        for kind in tamper_agents_for(env):
            tampered = await run_episode(env, kind(tasks[1]), tasks[1], seed=0)  # type: ignore[call-arg]
            assert tampered.reward == 0.0 and tampered.outcome is not Outcome.SUCCESS, (kind.name, tampered.verdict)
