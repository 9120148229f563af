"""The web family's tampering agents (and the kernel's generic ones) score 0 on its bundled tasks.

The samples include the tasks where a tamperer once earned reward: quoting the start page back answered
``shop-stock`` and ``forum-author`` (2/3), and on MiniWoB++ an easier page (``click-test``) started from its
START cover and solved set the reward globals the grader read, whatever the task's page.
"""

from __future__ import annotations

import pytest

import envgym
from envgym.check import env_tasks
from envgym.rollout import run_episode
from envgym.tamper import TamperAgent, tamper_agents_for
from envgym.types import Action, Outcome
from envgym_web.tamper import DressThePage, OtherMiniWobPage, QuoteBack, TypeUnsent

pytestmark = pytest.mark.browser

SAMPLES = {
    "web/shop-v1": ("shop-buy-00", "shop-stock-00", "shop-order-count-00"),
    "web/forum-v1": ("forum-reply-00", "forum-author-00", "forum-reply-count-00"),
    "web/miniwob-v1": ("miniwob-click-button-s1", "miniwob-click-dialog-s1", "miniwob-focus-text-s1"),
}
OWN = {"web/shop-v1": {DressThePage, TypeUnsent, QuoteBack}, "web/forum-v1": {DressThePage, TypeUnsent, QuoteBack},
       "web/miniwob-v1": {DressThePage, OtherMiniWobPage}}


@pytest.mark.parametrize("env_id", sorted(SAMPLES))
async def test_every_tamperer_scores_zero(env_id):
    tasks = {t.id: t for t in env_tasks(env_id)}
    forged = []
    async with envgym.make(env_id) as env:
        agents = tamper_agents_for(env)
        assert OWN[env_id] <= set(agents)
        for agent in agents:
            for task_id in SAMPLES[env_id]:
                task = tasks[task_id]
                trajectory = await run_episode(env, agent(task), task, seed=0)
                if trajectory.reward != 0.0 or trajectory.outcome in (Outcome.SUCCESS, Outcome.INFRA_ERROR) or (
                        trajectory.verdict is not None and trajectory.verdict.passed):
                    forged.append((agent.name, task_id, trajectory.reward, trajectory.outcome.value))
    assert not forged, forged


async def test_another_miniwob_page_solved_is_not_the_task():
    task = next(t for t in env_tasks("web/miniwob-v1") if t.id == "miniwob-click-button-s1")
    async with envgym.make("web/miniwob-v1") as env:
        trajectory = await run_episode(env, OtherMiniWobPage(task), task, seed=0)
    assert trajectory.verdict is not None and trajectory.reward == 0.0
    assert trajectory.verdict.evidence["miniwob"]["reason"] == "left the task page"


class Hedge(TamperAgent):
    """Answers at once with a short list of every candidate: each display name, or the numbers 0 to 10."""

    name = "hedge"

    async def act(self, observation):
        users = self.task.initial_state["db"].get("users", [])
        if "author" in self.task.id:
            return Action.call("send_msg_to_user", text="It is one of: " + ", ".join(u["display_name"] for u in users))
        return Action.call("send_msg_to_user", text="One of " + " ".join(str(n) for n in range(11)))


@pytest.mark.parametrize(("env_id", "task_id"), [("web/forum-v1", "forum-author-00"), ("web/shop-v1", "shop-stock-00"),
                                                 ("web/forum-v1", "forum-reply-count-00")])
async def test_a_short_list_of_every_candidate_earns_nothing(env_id, task_id):
    task = next(t for t in env_tasks(env_id) if t.id == task_id)
    async with envgym.make(env_id) as env:
        trajectory = await run_episode(env, Hedge(task), task, seed=0)
    assert trajectory.reward == 0.0, trajectory.verdict
