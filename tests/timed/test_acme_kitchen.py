"""Done-when of the timed base as a contract for outside engines: a third-party package puts a gym-style,
turn-based engine (``step(action) -> obs, reward, done, info``) behind ``envgym.plugin.timed`` with no
override of ``reset``/``step``, and its episodes end the moment the engine says the order is done.

The package is ``tests/thirdparty/acme_kitchen`` (its own pyproject.toml), installed as
``tests/test_thirdparty.py`` installs ``acme_counter``: a distribution on ``sys.path`` whose
``entry_points.txt`` names its hook, inside an isolated registry that loads every installed plug-in afresh.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import envgym
from envgym.agent import Agent
from envgym.cli import main
from envgym.errors import EnvgymError
from envgym.rollout import run_episode
from envgym.task import load_suite
from envgym.timed.replay import regrade
from envgym.types import Action, Observation, ToolCall

from fakes import installed_plugin

PACKAGE = Path(__file__).parents[1] / "thirdparty" / "acme_kitchen"


@pytest.fixture
def kitchen(tmp_path, monkeypatch):
    with installed_plugin(tmp_path, monkeypatch, PACKAGE, "acme_kitchen = acme_kitchen:register_all"):
        yield


def call(name: str, **args: object) -> Action:
    return Action(tool_calls=(ToolCall.of(name, **args),))


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_the_port_overrides_neither_reset_nor_step_and_the_engine_is_outside():
    tree = ast.parse((PACKAGE / "acme_kitchen" / "env.py").read_text())
    methods = {f.name for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
               if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    assert "reset" not in methods and "step" not in methods and "finished" in methods and "describe" in methods
    sources = "\n".join(p.read_text() for p in (PACKAGE / "acme_kitchen").glob("*.py"))
    assert "from envgym.timed" not in sources and "envgym_timed" not in sources  # the plug-in surface only
    engine = ast.parse((PACKAGE / "acme_kitchen" / "engine.py").read_text())
    imported = {a.name for n in ast.walk(engine) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(engine) if isinstance(n, ast.ImportFrom)}
    assert imported == {"__future__", "dataclasses"}  # the engine is outside: no envgym in it


def test_check_passes_the_contract_and_every_gate(kitchen, screen):
    assert main(["check", "acme/kitchen-v1", "--concurrency", "2"]) == 0, screen()


def test_oracle_passes_every_order_ending_on_the_goal_null_and_random_score_zero(kitchen, screen, tmp_path):
    tasks = {t.id: t for t in load_suite("acme-kitchen")}
    assert len(tasks) == 10 and {t.initial_state["variant"] for t in tasks.values()} == {"sync", "async"}
    runs = {}
    for agent in ("oracle", "null", "random:3"):
        out = tmp_path / agent.replace(":", "-")
        assert main(["eval", "--suite", "acme-kitchen", "--split", "all", "--agent", agent, "--out", str(out),
                     "--quiet"]) == 0, screen()
        runs[agent] = _records(out)
    assert [r["outcome"] for r in runs["oracle"]] == ["success"] * 10
    for record in runs["oracle"]:  # no final message: the last solution step plates the order and ends it
        timeline = record["verdict"]["evidence"]["timeline"]
        assert timeline["ended_by"] == "world" and timeline["end_reason"] == "the order is plated"
        assert record["steps"] == len(tasks[record["task_id"]].solution)
        assert not any(a.text for a in tasks[record["task_id"]].solution)
    assert {r["score"] for r in runs["null"]} == {0.0} and {r["score"] for r in runs["random:3"]} == {0.0}


def _waiting_cook(engine) -> Action:
    """Whatever cooks, wait for it to be done before anything else; otherwise what the greedy cook does."""
    items = engine.items.values()
    cooking = [i for i in items if i.on == "stove" and not i.cooked]
    if cooking:
        return call("wait_for_notification", timeout=30, source=cooking[0].id)
    for i in items:
        if i.on == "stove":
            return call("take", item=i.id)
    for i in items:
        if i.on == "counter" and i.ready:
            return call("plate", item=i.id)
    for i in items:
        if i.chop and not i.chopped:
            return call("chop", item=i.id)
    return call("cook", item=next(i.id for i in items if i.cook is not None and not i.cooked))


async def test_a_cook_who_waits_for_the_stove_loses_turns_on_async_orders_only(kitchen):
    lost = {}
    for task in load_suite("acme-kitchen"):
        async with envgym.make("acme/kitchen-v1") as env:
            oracle = await run_episode(env, _Replay(task.solution), task, seed=0)
            await env.reset(task=task, seed=0)
            for _ in range(40):
                _, _, terminated, truncated, info = await env.step(_waiting_cook(env.unwrapped.world.engine))
                if terminated or truncated:
                    break
            assert info["terminated_by"] == "world"  # the waiting cook plates the order too, later
            lost[task.id] = env.unwrapped.timeline().end_s - oracle.verdict.evidence["efficiency"]["virtual_time_s"]
    assert all(v == 0 for k, v in lost.items() if k.endswith("-sync")), lost
    assert all(v > 0 for k, v in lost.items() if k.endswith("-async")), lost


class _Replay(Agent):
    name = "replay"

    def __init__(self, actions: tuple[Action, ...]) -> None:
        super().__init__()
        self.actions = list(actions)

    async def act(self, observation: Observation) -> Action:
        return self.actions.pop(0) if self.actions else Action(text="done")


async def test_an_agent_that_would_undo_the_reached_goal_cannot(kitchen):
    task = next(t for t in load_suite("acme-kitchen") if t.id == "kitchen-burger-async")
    last = task.solution[-1].tool_calls[0]
    undo = call("unplate", item=json.loads(last.arguments)["item"])
    async with envgym.make("acme/kitchen-v1") as env:
        trajectory = await run_episode(env, _Replay((*task.solution, undo)), task, seed=0)
        assert len(trajectory.steps) == len(task.solution)  # the undo was never asked for: the episode ended
        assert trajectory.verdict.passed and trajectory.outcome.value == "success"
        assert (await regrade(task, trajectory)).passed  # the kernel's replay stops where the world ended it
        with pytest.raises(EnvgymError):
            await env.step(undo)
    # the same undo in the same action as the plating: not run, the goal stands
    async with envgym.make("acme/kitchen-v1") as env:
        await env.reset(task=task, seed=0)
        for action in task.solution[:-1]:
            await env.step(action)
        obs, _, terminated, _, info = await env.step(Action(tool_calls=(*task.solution[-1].tool_calls,
                                                                        *undo.tool_calls)))
        assert terminated and info["terminated_by"] == "world" and "Episode finished: the order is plated" in obs.text
        assert obs.tool_results[1].error == "not run: the episode ended (the order is plated)"
        assert (await env.unwrapped.verify()).passed


async def test_text_results_arrive_plain_the_opening_view_comes_first_and_a_refusal_costs_no_time(kitchen):
    task = next(t for t in load_suite("acme-kitchen") if t.id == "kitchen-burger-async")
    async with envgym.make("acme/kitchen-v1") as env:
        obs, info = await env.reset(task=task, seed=0)
        assert obs.text.startswith(f"[step 0] {task.instruction}\n\nTurn 0. Order: bun, lettuce, patty.\nCounter:")
        assert "deciding costs no time" in info["policy"] and "so does reaching the goal" in info["policy"]
        obs, *_ = await env.step(call("look"))
        assert obs.tool_results[0].content.startswith("Turn 0. Order: bun, lettuce, patty.\nCounter: bun (ready)")
        obs, *_ = await env.step(call("plate", item="patty"))  # checked now: raw, refused, no turn taken
        assert obs.time_s == 0 and "not ready to plate" in obs.last_action_error
        obs, *_ = await env.step(call("cook", item="patty"))  # performed as the next tick: one turn
        assert obs.time_s == 1 and obs.tool_results[0].content.startswith("Turn 1.")
        assert "patty (cooking 1/4)" in obs.tool_results[0].content
        obs, *_ = await env.step(call("wait_for_notification", timeout=10, source="patty"))
        assert obs.time_s == 4 and [n.content for n in obs.notifications] == ["patty is cooked"]
        timeline = env.unwrapped.timeline()
        assert timeline.steps[2].acting_s == 1  # the turn of the cook action
        assert timeline.steps[3].waiting_s == 3 and timeline.steps[3].idle_s == 0  # cooking is pending: not idle
