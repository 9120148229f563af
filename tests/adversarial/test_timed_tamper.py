"""The timed family's tampering agents (and the kernel's generic ones) score 0 on every bundled task.

``late-oracle`` does exactly what the reference does, after the deadline: it must fail for the time alone.
"""

from __future__ import annotations

import pytest

import envgym
from envgym.check import env_tasks
from envgym.rollout import run_episode
from envgym.tamper import ForwardInstruction, TamperAgent, tamper_agents_for
from envgym.types import Action, Outcome, ToolCall
from envgym_timed.tamper import ClaimOnTime, LateOracle, latest_deadline

ENVS = ("timed/assistant-v1", "timed/backoffice-v1", "timed/kitchen-v1")


@pytest.mark.parametrize("env_id", ENVS)
async def test_every_tamperer_scores_zero_on_every_task(env_id):
    forged = []
    async with envgym.make(env_id) as env:
        agents = tamper_agents_for(env)
        assert {LateOracle, ClaimOnTime, ForwardInstruction} <= set(agents)
        for task in env_tasks(env_id):
            for agent in agents:
                trajectory = await run_episode(env, agent(task), task, seed=0)
                if trajectory.reward != 0.0 or trajectory.outcome in (Outcome.SUCCESS, Outcome.INFRA_ERROR) or (
                        trajectory.verdict is not None and trajectory.verdict.passed):
                    forged.append((agent.name, task.id, trajectory.reward, trajectory.outcome.value))
    assert not forged, forged


async def test_the_late_oracle_fails_for_the_time_alone():
    task = next(t for t in env_tasks("timed/kitchen-v1") if t.id == "kitchen-pasta-sync")
    assert latest_deadline(task) == 20 * 60  # serve by 09:20, the day starts at 09:00
    async with envgym.make("timed/kitchen-v1") as env:
        trajectory = await run_episode(env, LateOracle(task), task, seed=0)
    verdict = trajectory.verdict
    assert verdict is not None and trajectory.reward == 0.0
    expected = next(c for c in verdict.criteria if c.name == "expected_writes")
    assert "mistimed" in expected.detail and "after 09:20" in expected.detail


class NestedRejected(TamperAgent):
    """A call whose unknown argument nests a few hundred levels: rejected, and still gradable."""

    name = "nested-rejected"

    async def act(self, observation):
        self.turn += 1
        if self.turn > 1:
            return Action(text="done")
        deep = '{"a": ' * 300 + "1" + "}" * 300
        return Action(tool_calls=(ToolCall(id="n1", name="wait", arguments=f'{{"oops": {deep}}}'),))


async def test_a_deeply_nested_rejected_call_is_graded_not_a_verifier_crash():
    task = env_tasks("timed/kitchen-v1")[0]
    async with envgym.make("timed/kitchen-v1") as env:
        trajectory = await run_episode(env, NestedRejected(task), task, seed=0)
    assert trajectory.error is None and trajectory.verdict is not None, trajectory.error
    assert trajectory.reward == 0.0 and trajectory.outcome is Outcome.FAILURE
    trajectory.model_dump_json()  # the timeline in the evidence serialises
