"""Imported OSWorld tasks on a real desktop container: the references pass, doing nothing or the wrong thing
fails (the admission gates of ``gui-osworld``, plus a tempting wrong path)."""

from __future__ import annotations

from pathlib import Path

import pytest

import envgym
from envgym.agents.baseline import NullAgent, OracleAgent
from envgym.rollout import run_episode
from envgym.task import load_tasks
from envgym.testing.agents import ScriptedAgent
from envgym.types import Action, Outcome

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUITE = Path(__file__).parents[2] / "tasks" / "gui-osworld" / "tasks.jsonl"
ENV_ID = "gui/osworld-v1"
RENAME = "osworld-os-e0df059f-28a6-4169-924f-b9623e7184cc"
BLUETOOTH = "osworld-os-b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_tasks(SUITE)}


async def test_references_pass_and_doing_nothing_or_the_wrong_thing_fails(tasks) -> None:
    rename, infeasible = tasks[RENAME], tasks[BLUETOOTH]
    # a tempting wrong path: copy the folder under a misspelt name, then claim success
    wrong = ScriptedAgent([Action.call("type", text="cp -r ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan2"),
                           Action.call("key", keys="Return"), Action.call("wait", seconds=1), Action.call("done")])
    async with envgym.make(ENV_ID) as env:
        runs = {
            "oracle": await run_episode(env, OracleAgent(rename), rename),
            "null": await run_episode(env, NullAgent(), rename),
            "wrong": await run_episode(env, wrong, rename),
            "oracle infeasible": await run_episode(env, OracleAgent(infeasible), infeasible),
            "claims done on infeasible": await run_episode(env, ScriptedAgent([Action.call("done")]), infeasible),
        }
    outcomes = {name: (t.outcome, t.reward) for name, t in runs.items()}
    assert outcomes == {
        "oracle": (Outcome.SUCCESS, 1.0), "null": (Outcome.FAILURE, 0.0), "wrong": (Outcome.FAILURE, 0.0),
        "oracle infeasible": (Outcome.SUCCESS, 1.0), "claims done on infeasible": (Outcome.FAILURE, 0.0)}
    evidence = runs["wrong"].verdict.evidence["desktop"]
    assert [e["passed"] for e in evidence] == [True, False]  # ended with done, but no folder todo_list_Jan_2
