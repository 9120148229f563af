"""The timed base's contract for outside engines (envgym.timed.world / tools / env): a world ends the episode
(``finished``), opens it (``describe``), owns delayed effects (``pending``) and reopens finished sources
(``reopen``); a tool is checked before time passes (``check``) or performed as the next tick (``at_tick``);
a ``str`` result is plain text; a step clock states its thinking charge; overriding ``in_flight`` warns."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from envgym.agents.baseline import OracleAgent
from envgym.rollout import run_episode
from envgym.task import TaskSpec
from envgym.timed import TimedWorld, TimedWorldEnv, ToolFailure, tool
from envgym.types import Action, ToolCall


class Tank(TimedWorld):
    """A step-clock tank: while the valve is open it fills one unit a tick; full at ``target``."""

    unit = "step"

    def __init__(self, *, target: int, variant: str = "sync") -> None:
        super().__init__(horizon=40, variant=variant)
        self.level, self.valve, self.target, self.turns = 0, False, target, 0

    def ticking(self) -> bool:
        return self.valve

    def on_tick(self) -> None:
        self.level += 1
        self.turns += 1
        self.notify("alert", "tank", f"level {self.level}", completes=self.level == 2)

    def finished(self) -> str | None:
        return f"the tank is full ({self.level})" if self.level >= self.target else None

    def describe(self) -> str:
        return f"The tank holds {self.level} of {self.target}."

    def pending(self) -> int:
        return int(self.valve)

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"tank": [{"id": "t", "level": self.level, "full": self.level >= self.target}]}


class Empty(BaseModel):
    pass


@tool("write", "Open the valve.")
def open_valve(world: Tank, args: Empty) -> dict[str, Any]:
    world.valve = True
    return {"valve": "open"}


@tool("write", "Close the valve.")
def close_valve(world: Tank, args: Empty) -> dict[str, Any]:
    world.valve = False
    return {"valve": "closed"}


def _not_while_open(world: Tank, args: Empty) -> None:
    if world.valve:
        raise ToolFailure("close the valve first")


@tool("write", "Pour a bucket (takes 3 steps).", duration=3, check=_not_while_open)
def pour(world: Tank, args: Empty) -> str:
    world.level += 2
    return f"poured\nlevel {world.level}"


@tool("read", "Read the gauge (slow).", slow=True)
def gauge(world: Tank, args: Empty) -> str:
    return f"level {world.level}\nof {world.target}"


@tool("write", "Add one unit as the next tick.", check=_not_while_open, at_tick=True)
def add(world: Tank, args: Empty) -> str:
    world.level += 1
    world.turns += 1
    return f"level {world.level}"


@tool("write", "Stir, as the next tick.", at_tick=True)
def stir(world: Tank, args: Empty) -> str:
    world.turns += 1
    return "stirred"


class TankEnv(TimedWorldEnv):
    unit = "step"
    tools = (open_valve, close_valve, pour, gauge, add, stir)

    def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Tank:
        return Tank(target=int(task.initial_state["target"]), variant=task.initial_state.get("variant", "sync"))


def tank_task(target: int = 3, *, variant: str = "sync", solution: tuple[Action, ...] = ()) -> TaskSpec:
    verifier = {"type": "timed_write", "allow_collateral": True,
                "final_state": [{"path": "tank.t.full", "equals": True}]}
    return TaskSpec(id=f"tank-{target}-{variant}", env_id="test/tank-v1", instruction="Fill the tank.",
                    initial_state={"target": target, "variant": variant}, verifiers=(verifier,), solution=solution)


def call(name: str, **args: Any) -> Action:
    return Action(tool_calls=(ToolCall.of(name, **args),))


def calls(*names: str) -> Action:
    return Action(tool_calls=tuple(ToolCall.of(n) for n in names))


async def test_the_world_ends_the_episode_inside_a_wait_and_the_kernel_grades_it():
    env = TankEnv(thinking="none")
    obs, info = await env.reset(task=tank_task(3), seed=0)
    assert obs.text == "[step 0] Fill the tank.\n\nThe tank holds 0 of 3."
    assert "so does reaching the goal" in info["policy"]
    await env.step(call("open_valve"))
    obs, _, terminated, truncated, info = await env.step(call("wait", steps=10))
    assert terminated and not truncated and obs.time_s == 3  # stopped at the tick that filled it, not at 10
    assert info["terminated_by"] == "world" and info["end_reason"] == "the tank is full (3)"
    assert "\nEpisode finished: the tank is full (3).\n" in obs.text
    timeline = env.timeline()
    assert timeline.ended_by == "world" and timeline.end_reason == "the tank is full (3)" and timeline.end_s == 3
    assert (await env.verify()).passed


async def test_the_rollout_grades_a_world_ended_episode_once_with_no_final_message():
    task = tank_task(3, solution=(call("open_valve"), call("wait", steps=10), Action(text="full")))
    env = TankEnv(thinking="none")
    trajectory = await run_episode(env, OracleAgent(task), task, seed=0)
    assert len(trajectory.steps) == 2 and trajectory.outcome.value == "success" and trajectory.verdict.passed
    assert trajectory.verdict.evidence["timeline"]["ended_by"] == "world"


async def test_calls_after_the_end_are_not_run_and_an_action_decided_after_it_does_nothing():
    env = TankEnv(thinking="steps:2")
    await env.reset(task=tank_task(2), seed=0)
    await env.step(call("open_valve"))  # open at step 2; the tank fills at 3 and 4 ...
    obs, _, terminated, _, info = await env.step(calls("close_valve"))  # ... while the agent decides
    assert terminated and obs.time_s == 4 and env.world.valve  # the close was never performed
    assert obs.tool_results == () and info["terminated_by"] == "world"
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(1), seed=0)
    obs, _, terminated, *_ = await env.step(calls("add", "pour"))
    assert terminated and obs.tool_results[1].error == "not run: the episode ended (the tank is full (1))"
    assert [c.name for c in env.timeline().calls] == ["add"]


async def test_an_action_taking_time_is_cut_when_the_world_ends_meanwhile():
    class Leaky(Tank):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.scheduler.schedule("flood", at=2, action=lambda _e: setattr(self, "level", 9))

    class LeakyEnv(TankEnv):
        def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Tank:
            return Leaky(target=5)

    env = LeakyEnv(thinking="none")
    await env.reset(task=tank_task(5), seed=0)
    obs, _, terminated, *_ = await env.step(call("pour"))
    assert terminated and obs.time_s == 2 and env.world.level == 9  # the pour's effect never happened
    assert obs.tool_results[0].error == "the episode ended (the tank is full (9)) 2 steps into it"


async def test_a_check_refuses_before_any_time_passes_and_a_str_result_is_plain_text():
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(9), seed=0)
    await env.step(call("open_valve"))
    obs, *_ = await env.step(call("pour"))
    assert obs.time_s == 0 and obs.last_action_error == "pour: close the valve first" and env.world.level == 0
    await env.step(call("close_valve"))
    obs, *_ = await env.step(call("pour"))
    assert obs.time_s == 3 and obs.tool_results[0].content == "poured\nlevel 2"  # not '"poured\\nlevel 2"'
    obs, *_ = await env.step(call("open_valve"))
    assert obs.tool_results[0].content == '{"valve": "open"}'  # anything else: JSON


async def test_a_slow_tools_str_result_arrives_as_plain_text_in_its_notification():
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(9, variant="async"), seed=0)
    obs, *_ = await env.step(call("gauge"))
    assert obs.tool_results[0].content == '{"handle": "h1", "status": "pending", "tool": "gauge"}'
    assert [(n.kind, n.source, n.content) for n in obs.notifications] == [("tool_result", "h1", "level 0\nof 9")]


async def test_an_at_tick_tool_is_checked_now_and_performed_as_the_next_tick_in_place_of_on_tick():
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(9), seed=0)
    await env.step(call("open_valve"))
    obs, *_ = await env.step(call("add"))
    assert obs.time_s == 0 and "close the valve first" in obs.last_action_error  # refused: no tick taken
    await env.step(call("close_valve"))
    obs, *_ = await env.step(calls("add", "add"))
    assert obs.time_s == 2 and [r.content for r in obs.tool_results] == ["level 1", "level 2"]
    assert env.timeline().steps[-1].acting_s == 2 and env.world.turns == 2
    await env.step(call("open_valve"))  # the engine ticks from now on; a stir is that tick's turn instead
    obs, *_ = await env.step(call("stir"))
    assert obs.time_s == 3 and obs.tool_results[0].content == "stirred" and env.world.level == 2
    await env.step(call("wait", steps=1))
    assert env.world.level == 3 and env.world.turns == 4
    with pytest.raises(ValueError, match="at_tick"):
        tool("write", "both", at_tick=True, duration=1)(add.fn)


async def test_pending_effects_are_not_idle_and_a_final_message_does_not_wait_for_them():
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(30), seed=0)
    await env.step(call("open_valve"))
    await env.step(call("wait", steps=4))
    await env.step(call("close_valve"))
    await env.step(call("wait", steps=2))
    steps = env.timeline().steps
    assert (steps[1].waiting_s, steps[1].idle_s) == (4, 0) and (steps[3].waiting_s, steps[3].idle_s) == (2, 2)
    await env.step(call("open_valve"))
    obs, _, terminated, *_ = await env.step(Action(text="enough"))
    assert terminated and obs.time_s == 6 and env.timeline().ended_by == "final_answer"


async def test_a_completing_notification_finishes_its_source_until_the_world_reopens_it():
    env = TankEnv(thinking="none")
    await env.reset(task=tank_task(30), seed=0)
    await env.step(call("open_valve"))
    await env.step(call("wait", steps=3))  # level 2 completes "tank", level 3 does not
    obs, *_ = await env.step(call("wait_for_notification", timeout=5, source="tank"))
    assert obs.time_s == 3 and obs.tool_results[0].content == (
        '{"now": "step 3", "timed_out": false, "waited_steps": 0, "woke_on": "tank"}')  # at once: finished
    env.world.reopen("tank")
    obs, *_ = await env.step(call("wait_for_notification", timeout=5, source="tank"))
    assert obs.time_s == 4 and [n.content for n in obs.notifications] == ["level 4"]


async def test_overriding_in_flight_warns_and_still_delays_a_final_message():
    with pytest.warns(DeprecationWarning, match="pending"):
        class OldTank(Tank):
            def in_flight(self) -> int:
                return int(self.valve)

    class OldEnv(TankEnv):
        def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Tank:
            return OldTank(target=5)

    env = OldEnv(thinking="none")
    await env.reset(task=tank_task(5), seed=0)
    await env.step(call("open_valve"))
    obs, _, terminated, *_ = await env.step(Action(text="done"))
    assert terminated and obs.time_s == 5 and env.timeline().ended_by == "final_answer"  # drained: as before


async def test_a_step_clock_states_its_default_thinking_charge_and_a_class_can_name_its_own():
    env = TankEnv()
    _, info = await env.reset(task=tank_task(3), seed=0)
    assert info["thinking"] == {"type": "fixed", "seconds": 2.0}
    assert "each decision costs 2 steps (fixed policy)" in info["policy"]

    class TurnTank(TankEnv):
        default_thinking = "steps:1"

    _, info = await TurnTank().reset(task=tank_task(3), seed=0)
    assert info["thinking"]["type"] == "steps" and "each decision costs 1 step (steps policy)" in info["policy"]
    _, info = await TurnTank(thinking="none").reset(task=tank_task(3), seed=0)
    assert "deciding costs no time (none policy)" in info["policy"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TimedWorldEnv.default_thinking is None  # the seconds-clock families keep fixed:2 (2 s)
