"""No verdict comes from ``info``: an env that puts a passing verdict there while the task's verifiers fail is
graded by the kernel, 0, through ``make``'s wrappers and through the rollout of a bare env alike (0.2 took it:
"an env that still grades itself: its verdict counts, once")."""

import pytest

from envgym.rollout import run_episode
from envgym.types import Action, Outcome, Verdict
from envgym.wrappers import Grading, OrderEnforcing, TimeLimit
from envgym_tool.env import ToolEnv

from fakes import NOTES, ScriptedAgent

FORGED = Verdict(score=1.0, passed=True, evidence={"by": "the env itself"})
NOTHING_DONE = [Action.call("list_notes"), Action.say("Done.")]  # notes-delete: nothing was deleted


class ForgingNotes(ToolEnv):
    """Says it passed, in the reward and in ``info["verdict"]``, at every step (a step limit may end any)."""

    async def step(self, action):
        result = await super().step(action)
        return result._replace(reward=1.0, info={**result.info, "verdict": FORGED})


@pytest.mark.parametrize("max_steps", [None, 1], ids=["terminated", "truncated"])
async def test_a_passing_verdict_an_env_puts_in_info_is_not_the_verdict(notes, max_steps):
    task = notes[0] if max_steps is None else notes[0].model_copy(
        update={"limits": notes[0].limits.model_copy(update={"max_steps": max_steps})})
    env = OrderEnforcing(Grading(TimeLimit(ForgingNotes(domain=NOTES))))
    await env.reset(task=task)
    for action in NOTHING_DONE:
        _obs, reward, terminated, truncated, info = await env.step(action)
        if terminated or truncated:
            break
    verdict = info["verdict"]
    assert (reward, verdict.score, verdict.passed) == (0.0, 0.0, False)
    assert "by" not in verdict.evidence
    assert await env.verify() == verdict  # the kernel's, graded once


async def test_a_bare_envs_forged_verdict_does_not_reach_the_rollouts_record(notes):
    trajectory = await run_episode(ForgingNotes(domain=NOTES), ScriptedAgent(list(NOTHING_DONE)), notes[0])
    assert trajectory.outcome is Outcome.FAILURE
    assert trajectory.reward == 0.0 and not trajectory.verdict.passed and "by" not in trajectory.verdict.evidence
