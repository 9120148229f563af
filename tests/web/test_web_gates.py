"""Admission gates on a sample of each app's task kinds (``envgym check`` runs them on every task)."""

from __future__ import annotations

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Action, Outcome

pytestmark = pytest.mark.browser


def one_per_kind(suite: str) -> list:
    seen, out = set(), []
    for task in load_suite(suite):
        kind = task.tags[-1]
        if kind not in seen:
            seen.add(kind)
            out.append(task)
    return out


@pytest.mark.parametrize("env_id,suite", [("web/shop-v1", "web-shop"), ("web/forum-v1", "web-forum")])
async def test_oracle_passes_and_null_fails_on_every_task_kind(env_id: str, suite: str) -> None:
    async with envgym.make(env_id) as env:
        for task in one_per_kind(suite):
            oracle = await run_episode(env, OracleAgent(task), task, seed=0)
            assert oracle.outcome is Outcome.SUCCESS and oracle.reward == 1.0, (task.id, oracle.error, oracle.verdict)
            null = await run_episode(env, NullAgent(), task, seed=0)
            assert null.outcome is Outcome.FAILURE and null.reward == 0.0, task.id


async def test_wrong_purchase_fails_the_write_check() -> None:
    task = next(t for t in load_suite("web-shop") if t.id == "shop-buy-00")
    wrong = [a for a in task.solution if a.tool_calls[0].name != "send_msg_to_user"]
    async with envgym.make("web/shop-v1") as env:
        await env.reset(task=task)
        await env.step(Action.call("goto", url="/product/1"))  # an extra item in the cart: a collateral purchase
        await env.step(Action.call("click", element_id="add-to-cart"))
        await env.step(Action.call("goto", url="/"))
        for action in wrong:
            await env.step(action)
        result = await env.step(Action.say("done"))
        verdict = result.info["verdict"]
        assert not verdict.passed and result.reward == 0.0
        assert any(c.name == "final_state" and not c.passed for c in verdict.criteria)
