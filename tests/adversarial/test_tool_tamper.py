"""The tool family's tampering agents (and the kernel's generic ones) score 0 on its bundled tasks.

Each task below is one where a tamperer once earned reward: quoting the instruction (alone, or with the
store) passed answer checks (codes, retail price and refusal answers), listing every code passed ``contains``, a
look-up plus a wrong answer earned half of a refusal, and a create with no record id replayed the oracle.
"""

from __future__ import annotations

import pytest

import envgym
from envgym.check import env_tasks, tamper_sample
from envgym.rollout import run_episode
from envgym.tamper import ForwardInstruction, QuoteInstruction, tamper_agents_for
from envgym.types import Outcome
from envgym_tool.tamper import (
    ClaimDone,
    ListCandidates,
    OtherWriteTool,
    QuoteBack,
    WrongRecord,
)

SAMPLES = {
    "tool/retail-v1": ("retail-011-email-taken", "retail-020-refund-over-price", "retail-024-order-total",
                       "retail-026-product-price", "retail-028-modify-item-price", "retail-035-someone-elses-order",
                       "retail-039-which-orders-pending"),
    "tool/assistant-v1": ("assistant-013-count-unread", "assistant-014-phone-number", "assistant-034-create-contact",
                          "assistant-028-handle-bob-request", "assistant-037-reply-elena-approved"),
    "tool/codes-v1": ("codes-001-echo", "codes-061-given", "codes-121-lookup"),
}


async def _run(env_id: str, ids: list[str]) -> list[tuple[str, str, float, Outcome, bool]]:
    tasks = {t.id: t for t in env_tasks(env_id)}
    out = []
    async with envgym.make(env_id) as env:
        agents = tamper_agents_for(env)
        assert {WrongRecord, OtherWriteTool, ForwardInstruction, ClaimDone, ListCandidates, QuoteBack} <= set(agents)
        for agent in agents:
            for task_id in ids:
                trajectory = await run_episode(env, agent(tasks[task_id]), tasks[task_id], seed=0)
                passed = trajectory.verdict is not None and trajectory.verdict.passed
                out.append((agent.name, task_id, trajectory.reward, trajectory.outcome, passed))
    return out


@pytest.mark.parametrize("env_id", sorted(SAMPLES))
async def test_every_tamperer_scores_zero(env_id):
    ids = list(SAMPLES[env_id])
    spread = [t.id for t in tamper_sample(env_tasks(env_id), 4)]
    results = await _run(env_id, list(dict.fromkeys(ids + spread)))
    forged = [r for r in results if r[2] != 0.0 or r[4] or r[3] in (Outcome.SUCCESS, Outcome.INFRA_ERROR)]
    assert not forged, forged


async def test_quoting_the_store_back_earns_nothing_on_codes():
    """The instruction plus the store lists the code with every other code: once 1/3 of every codes task."""
    task = next(t for t in env_tasks("tool/codes-v1") if t.id == "codes-001-echo")
    async with envgym.make("tool/codes-v1") as env:
        quoted = await run_episode(env, QuoteInstruction(task), task, seed=0)
        listed = await run_episode(env, ListCandidates(task), task, seed=0)
    assert quoted.reward == 0.0 and listed.reward == 0.0
    assert quoted.verdict is not None and not any(c.passed for c in quoted.verdict.criteria)


@pytest.mark.parametrize(("env_id", "task_id"), [("tool/codes-v1", "codes-001-echo"),
                                                 ("tool/retail-v1", "retail-026-product-price")])
async def test_the_instruction_alone_is_not_its_answer(env_id, task_id):
    task = next(t for t in env_tasks(env_id) if t.id == task_id)
    async with envgym.make(env_id) as env:
        quoted = await run_episode(env, QuoteBack(task), task, seed=0)
    assert quoted.reward == 0.0 and quoted.verdict is not None
    assert not any(c.passed for c in quoted.verdict.criteria if c.name in ("contains_code", "in_stock"))
