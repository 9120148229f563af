"""MiniWoB++ through envgym: the page's reward read back, seeded instances, the null gate on every page."""

from __future__ import annotations

import asyncio
import json

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.types import Action, Outcome
from envgym_web.miniwob import miniwob_task, pages

pytestmark = pytest.mark.browser


def test_the_package_ships_the_task_pages_and_the_suite_solves_fifteen() -> None:
    assert len(pages()) >= 100 and "click-button" in pages()
    solved = {t.initial_state["page"] for t in load_suite("web-miniwob")}
    assert len(solved) >= 15


async def test_seeded_instances_repeat_and_the_page_reward_is_read_back() -> None:
    task = next(t for t in load_suite("web-miniwob") if t.id == "miniwob-click-button-s1")
    async with envgym.make("web/miniwob-v1") as env:
        first, _ = await env.reset(task=task)
        again, _ = await env.reset(task=task)
        assert first.text.splitlines()[0] == again.text.splitlines()[0]  # the same utterance for the same seed
        other, _ = await env.reset(task=miniwob_task("click-button", 2))
        assert other.text != first.text
        await env.reset(task=task)
        right = json.loads(task.solution[0].tool_calls[0].arguments)["element_id"]
        wrong = next(line.split("]")[0][1:] for line in first.text.splitlines()
                     if ' button "' in line and not line.startswith(f"[{right}]"))
        result = await env.step(Action.call("click", element_id=wrong))
        assert result.terminated and result.reward == 0.0  # the page ends its episode with its own -1
        assert result.info["verdict"].evidence["miniwob"]["raw_reward"] < 0
        good = await run_episode(env, OracleAgent(task), task, seed=0)
        assert good.outcome is Outcome.SUCCESS and good.verdict.evidence["miniwob"]["raw_reward"] == 1


@pytest.mark.slow
async def test_null_agent_fails_every_miniwob_page() -> None:
    semaphore = asyncio.Semaphore(4)
    failures: list[str] = []

    async def gate(page: str) -> None:
        async with semaphore, envgym.make("web/miniwob-v1") as env:
            task = miniwob_task(page, 0)
            null = await run_episode(env, NullAgent(), task, seed=0)
            if null.outcome is not Outcome.FAILURE or null.reward != 0.0:
                failures.append(f"{page}: {null.outcome.value} {null.reward} {null.error}")

    await asyncio.gather(*(gate(p) for p in pages()))
    assert not failures
