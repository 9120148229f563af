"""The kernel base of time-evolving envs (envgym.timed.env / world / tools / prepare), on a small engine of
the test's own: per-step effects that pause, actions that take time, thinking in steps, virtual-time
budgets, opportunity idle, time to goal for state goals, and per-task preparation off the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

import envgym_verifiers
from envgym.agents.baseline import OracleAgent
from envgym.env import Env
from envgym.errors import EnvError, SpecError
from envgym.rollout import run_episode
from envgym.task import TaskSpec
from envgym.timed import TaskCache, TimedWorld, TimedWorldEnv, ToolFailure, thinking_policy, tool
from envgym.timed.thinking import ThinkingSample
from envgym.types import Action, Limits, Outcome, ToolCall, Usage


class Oven(TimedWorld):
    """A step-clock world: a loaf bakes ``steps`` steps, but only while the door is shut."""

    unit = "step"

    def __init__(self, *, bake: int, says: bool = True) -> None:
        super().__init__(horizon=50)
        self.door, self.loaf, self.says = "shut", "dough", says
        self.bake = bake

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"oven": [{"id": "o", "door": self.door, "loaf": self.loaf}]}

    def opportunity(self) -> bool | None:
        return (self.loaf == "dough") if self.says else None


class Empty(BaseModel):
    pass


@tool("write", "Put the loaf in; it bakes while the door is shut.")
def bake(world: Oven, args: Empty) -> str:
    if world.loaf != "dough":
        raise ToolFailure(f"the loaf is {world.loaf}")
    world.loaf = "baking"
    world.start_process("loaf", world.bake, active=lambda: world.door == "shut",
                        on_done=lambda _p: setattr(world, "loaf", "baked"))
    return "baking"


@tool("write", "Open the door (baking pauses).")
def open_door(world: Oven, args: Empty) -> str:
    world.door = "open"
    return "open"


@tool("write", "Shut the door.")
def shut_door(world: Oven, args: Empty) -> str:
    world.door = "shut"
    return "shut"


@tool("write", "Knead (takes 3 steps).", duration=3)
def knead(world: Oven, args: Empty) -> str:
    return "kneaded"


class OvenEnv(TimedWorldEnv):
    unit = "step"
    tools = (bake, open_door, shut_door, knead)

    def __init__(self, *, thinking: Any = "steps:1", says: bool = True, **budget: Any) -> None:
        super().__init__(thinking=thinking, **budget)
        self.says = says

    def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Oven:
        return Oven(bake=int(task.initial_state["bake"]), says=self.says)


def oven_task(*, bake: int = 4, budget: float | None = None, expected: bool = False,
              solution: tuple[Action, ...] = (), id: str | None = None, step_timeout_s: float = 120.0) -> TaskSpec:
    verifier: dict[str, Any] = {"type": "timed_write", "allow_collateral": True,
                                "final_state": [{"path": "oven.o.loaf", "equals": "baked"}]}
    if expected:
        verifier["expected"] = [{"tool": "bake"}]
    return TaskSpec(id=id or f"oven-{bake}-{budget}-{expected}".lower(), env_id="test/oven-v1",
                    instruction="Bake the loaf.", initial_state={"bake": bake}, verifiers=(verifier,),
                    solution=solution, limits=Limits(max_virtual_time=budget, step_timeout_s=step_timeout_s))


def call(name: str, **args: Any) -> Action:
    return Action(tool_calls=(ToolCall.of(name, **args),))


async def test_a_per_step_effect_pauses_while_inactive_and_resumes_where_it_stopped():
    env = OvenEnv()
    await env.reset(task=oven_task(bake=4), seed=0)
    await env.step(call("bake"))                     # step 1: in
    await env.step(call("open_door"))                # step 2: one step baked (tick 2)
    obs, *_ = await env.step(call("wait", steps=6))  # step 3..9: door open, no progress
    assert env.world.processes["loaf"].progress == 1 and env.world.processes["loaf"].state == "paused"
    await env.step(call("shut_door"))                # step 10 (tick 10: still open when it fell)
    obs, *_ = await env.step(call("wait", steps=5))
    timeline = env.timeline()
    assert env.world.loaf == "baked" and timeline.event("loaf").time == 13 and timeline.event("loaf").kind == "process"
    assert obs.clock == "step 16" and timeline.clock(13) == "step 13"


async def test_an_action_with_a_duration_keeps_the_agent_busy_and_counts_as_acting():
    env = OvenEnv()
    await env.reset(task=oven_task(bake=2), seed=0)
    await env.step(call("bake"))
    obs, *_ = await env.step(call("knead"))  # the loaf bakes meanwhile
    assert obs.time_s == 5 and obs.tool_results[0].content == "kneaded" and env.world.loaf == "baked"
    step = env.timeline().steps[-1]
    assert step.acting_s == 3 and step.waiting_s == 0
    assert "[write, takes time]" in next(t for t in env.tool_schemas
                                         if t["function"]["name"] == "knead")["function"]["description"]


async def test_an_action_cut_by_the_budget_fails_and_the_episode_is_truncated_there():
    env = OvenEnv(max_virtual_time=4)
    await env.reset(task=oven_task(bake=9), seed=0)
    await env.step(call("bake"))
    obs, _, terminated, truncated, info = await env.step(call("knead"))  # 2 + 3 > 4
    assert truncated and not terminated and info["truncated_by"] == "virtual_time_budget"
    assert obs.time_s == 4 and "ran out of time" in obs.last_action_error and "budget (4 steps)" in obs.text


async def test_the_tasks_budget_is_capped_by_the_runs_and_an_action_after_it_does_nothing():
    task = oven_task(bake=2, budget=10)
    env = OvenEnv(max_virtual_time=20)
    _, info = await env.reset(task=task, seed=0)
    assert info["time_budget"] == 10 and "10 steps of virtual time" in info["policy"]
    env = OvenEnv(max_virtual_time=3, thinking="steps:4")
    await env.reset(task=task, seed=0)
    _obs, _, _, truncated, _ = await env.step(call("bake"))  # decided at step 4: the time was up at 3
    assert truncated and env.world.loaf == "dough" and env.timeline().calls == ()
    with pytest.raises(SpecError, match="max_virtual_time must be positive"):
        OvenEnv(max_virtual_time=0)


def test_a_budget_joins_a_tasks_hash_only_when_set():
    plain = oven_task()
    assert "max_virtual_time" not in plain.model_dump(mode="json")["limits"]
    assert plain.hash == TaskSpec.model_validate_json(plain.model_dump_json()).hash
    assert oven_task(budget=7).hash != plain.hash
    with pytest.raises(ValueError):
        Limits(max_virtual_time=float("inf"))


def test_thinking_can_charge_steps():
    policy = thinking_policy("steps:2")
    assert policy.cost(ThinkingSample(step=0, wall_s=9.0, usage=None, tick=1.0)) == 2
    assert policy.cost(ThinkingSample(step=0, wall_s=0.0, usage=None, tick=30.0)) == 60  # a 30 s tick
    by_tokens = thinking_policy({"type": "steps", "steps": 1, "tokens_per_step": 100})
    usage = Usage(prompt_tokens=5, completion_tokens=250)
    assert by_tokens.cost(ThinkingSample(step=0, wall_s=0.0, usage=usage, tick=1.0)) == 4  # 1 + ceil(2.5)
    with pytest.raises(ValueError, match="not a thinking policy"):
        thinking_policy("steps:two")
    with pytest.raises(SpecError, match="invalid thinking policy"):
        OvenEnv(thinking="steps:x")


async def test_opportunity_idle_counts_waiting_while_an_action_was_available():
    env = OvenEnv()
    await env.reset(task=oven_task(bake=3), seed=0)
    await env.step(call("wait", steps=4))  # the dough could have gone in
    await env.step(call("bake"))
    await env.step(call("wait", steps=5))  # nothing left to do
    metrics = env.timeline().metrics()
    assert metrics["waiting_s"] == 9 and metrics["opportunity_idle_s"] == 4 and metrics["idle_s"] == 9
    blind = OvenEnv(says=False)
    await blind.reset(task=oven_task(bake=3), seed=0)
    await blind.step(call("wait", steps=4))
    assert blind.timeline().metrics()["opportunity_idle_s"] is None  # the world cannot say


async def test_time_to_goal_holds_for_a_state_goal_and_a_write_goal():
    env = OvenEnv()
    await env.reset(task=oven_task(bake=2), seed=0)
    await env.step(call("bake"))
    await env.step(call("wait", steps=6))
    verdict = await env.verify()
    assert verdict.passed and [c.name for c in verdict.criteria] == ["no_forbidden_writes", "no_collateral_writes",
                                                                     "state:oven.o.loaf"]
    assert verdict.evidence["efficiency"]["time_to_goal_s"] == 3  # in at 1, baked at the tick of step 3
    changes = verdict.evidence["timeline"]["state_changes"]
    assert [(c["time"], c["value"]) for c in changes] == [(0, "dough"), (1, "baking"), (3, "baked")]
    env = OvenEnv()
    await env.reset(task=oven_task(bake=4, expected=True), seed=0)
    await env.step(call("wait", steps=2))
    await env.step(call("bake"))  # in at step 4
    await env.step(call("wait", steps=1))
    verdict = await env.verify()
    assert not verdict.passed and verdict.evidence["efficiency"]["time_to_goal_s"] is None  # not reached yet
    await env.step(call("wait", steps=3))
    verdict = await env.verify()
    assert verdict.passed and verdict.evidence["efficiency"]["time_to_goal_s"] == 8  # baked at the tick of step 8


async def test_a_world_of_the_wrong_kind_or_unit_is_the_envs_error():
    class Wrong(OvenEnv):
        def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Any:
            return {"not": "a world"}

    class Seconds(TimedWorld):
        pass

    class Mixed(OvenEnv):
        def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> Any:
            return Seconds()

    with pytest.raises(EnvError, match="not a TimedWorld"):
        await Wrong().reset(task=oven_task(), seed=0)
    with pytest.raises(EnvError, match="counts time in 'step' but its world in 's'"):
        await Mixed().reset(task=oven_task(), seed=0)
    with pytest.raises(SpecError, match="invalid timed initial_state"):
        await OvenEnv().reset(task=oven_task().model_copy(update={"initial_state": {}}), seed=0)


# -- per-task preparation ---------------------------------------------------------------------------------

class Slow(OvenEnv):
    threads: ClassVar[list[int]] = []

    def prepare_task(self, task: TaskSpec) -> dict[str, Any]:
        Slow.threads.append(threading.get_ident())
        time.sleep(0.4)  # heavy work: longer than the step deadline below
        return {"bake": int(task.initial_state["bake"])}

    def build_world(self, task: TaskSpec, *, seed: int, prepared: dict[str, Any]) -> Oven:
        return Oven(bake=prepared["bake"])


async def test_preparation_runs_off_the_loop_outside_the_step_deadline_once_per_task():
    Slow.threads.clear()
    solution = (call("bake"), call("wait", steps=3), Action(text="done"))
    task = oven_task(bake=2, solution=solution, id="oven-prepared", step_timeout_s=0.2)
    for seed in (0, 1):
        trajectory = await run_episode(Slow(), OracleAgent(task), task, seed=seed)
        assert trajectory.outcome is Outcome.SUCCESS, trajectory.error
    assert len(Slow.threads) == 1 and Slow.threads[0] != threading.get_ident()  # once, in a worker thread
    other = oven_task(bake=3, solution=solution, id="oven-other")
    await Slow().reset(task=other, seed=0)  # reset alone prepares too
    assert len(Slow.threads) == 2


async def test_a_task_cache_builds_once_for_concurrent_episodes_and_not_after_a_failure():
    calls: list[str] = []

    def build(task: TaskSpec) -> str:
        calls.append(task.id)
        time.sleep(0.05)
        if task.id.startswith("bad"):
            raise ValueError("cannot build")
        return task.id.upper()

    cache = TaskCache(build, max_entries=1)
    task = oven_task()
    results = await asyncio.gather(*(cache.prepare(task) for _ in range(3)))
    assert results == [task.id.upper()] * 3 and cache.builds == 1 and task.hash in cache
    bad = oven_task(id="bad")
    for _ in range(2):
        with pytest.raises(ValueError, match="cannot build"):
            await cache.prepare(bad)
    assert calls.count("bad") == 2 and bad.hash not in cache
    other = oven_task(bake=5)
    await cache.prepare(other)
    assert other.hash in cache and task.hash not in cache  # max_entries=1: the least recently used went
    with pytest.raises(ValueError, match="at least one entry"):
        TaskCache(build, max_entries=0)


# -- the run's budget (envgym eval --max-virtual-time) -----------------------------------------------------

class Ticking(Env):  # a time-evolving env that is not on the kernel base
    time_evolving = True

    async def reset(self, *, task: Any = None, seed: int | None = None, options: Any = None) -> Any:
        raise AssertionError("never built")

    async def step(self, action: Action) -> Any:
        raise AssertionError("never built")


def test_the_runs_budget_is_in_the_config_only_when_set_and_refused_by_an_env_off_the_base(tmp_path):
    import envgym
    from envgym.agents import parse_agent
    from envgym.eval import EvalConfig, plan

    tasks = tmp_path / "tasks.jsonl"
    with envgym.isolated():
        envgym_verifiers.register_all()  # timed_write is a plug-in kind: an isolated registry has none
        envgym.register("test/oven-v1", f"{__name__}:OvenEnv")
        envgym.register("test/tick-v1", f"{__name__}:Ticking")
        tasks.write_text(oven_task().model_dump_json() + "\n")
        plain = EvalConfig(suites=(str(tasks),), split=None, agent=parse_agent("oracle"))
        budget = plain.model_copy(update={"max_virtual_time": 30.0})
        assert "max_virtual_time" not in plain.model_dump(mode="json") and plain.hash != budget.hash
        assert budget.model_dump(mode="json")["max_virtual_time"] == 30.0
        assert len(plan(budget)) == 1
        tasks.write_text(oven_task().model_copy(update={"env_id": "test/tick-v1"}).model_dump_json() + "\n")
        with pytest.raises(SpecError, match="test/tick-v1 is time-evolving but keeps no virtual time"):
            plan(budget)
        assert len(plan(plain)) == 1


async def test_a_failing_preparation_is_the_infrastructures_and_is_retried():
    class Broken(OvenEnv):
        def prepare_task(self, task: TaskSpec) -> Any:
            raise OSError("the goal image could not be built")

    task = oven_task(id="oven-broken", solution=(Action(text="done"),))
    trajectory = await run_episode(Broken(), OracleAgent(task), task, seed=0)
    assert trajectory.outcome is Outcome.INFRA_ERROR and "could not be built" in (trajectory.error or "")


def test_per_step_effects_on_a_seconds_clock_tick_every_tick_seconds():
    class Minutes(TimedWorld):
        tick = 60.0

    world = Minutes(horizon=3600)
    world.scheduler.run_until(30)
    world.start_process("stew", 3)  # ticks at 60, 120, 180
    world.scheduler.run_until(1000)
    assert world.events[0].id == "stew" and world.events[0].time == 180 and world.clock(180) == "00:03:00"
    with pytest.raises(ValueError, match="non-negative"):
        world.start_process("bad", -1)


async def test_a_budget_as_a_factor_of_the_reference_solutions_time():
    solution = (call("bake"), call("wait", steps=3), Action(text="done"))  # ends at step 6
    task = oven_task(bake=2, solution=solution, id="oven-factor")
    exact = await run_episode(OvenEnv(virtual_time_factor=1.0), OracleAgent(task), task, seed=0)
    assert exact.outcome is Outcome.SUCCESS and exact.verdict.evidence["timeline"]["budget"] == 6
    tight = await run_episode(OvenEnv(virtual_time_factor=0.4), OracleAgent(task), task, seed=0)  # baked at 3
    assert tight.outcome is Outcome.TRUNCATED and tight.verdict.evidence["efficiency"]["virtual_time_s"] == 2.4
    with pytest.raises(SpecError, match="needs simulated time"):
        TimedWorldEnv(virtual_time_factor=1.0, realtime=True)


class Narrow(OvenEnv):
    def __init__(self, *, max_virtual_time: float | None = None) -> None:
        super().__init__(max_virtual_time=max_virtual_time)


def test_a_timed_env_that_drops_the_factor_is_refused_at_plan_time(tmp_path):
    import envgym
    from envgym.agents import parse_agent
    from envgym.eval import EvalConfig, plan

    tasks = tmp_path / "tasks.jsonl"
    with envgym.isolated():
        envgym_verifiers.register_all()
        envgym.register("test/oven-v1", f"{__name__}:Narrow")
        tasks.write_text(oven_task().model_dump_json() + "\n")
        config = EvalConfig(suites=(str(tasks),), split=None, agent=parse_agent("oracle"), virtual_time_factor=1.5)
        assert config.model_dump(mode="json")["virtual_time_factor"] == 1.5
        with pytest.raises(SpecError, match="constructor takes no virtual_time_factor"):
            plan(config)
        assert len(plan(config.model_copy(update={"virtual_time_factor": None, "max_virtual_time": 9.0}))) == 1


async def test_a_time_of_day_on_a_step_clock_is_a_verifier_error():
    from envgym.errors import VerifierError

    task = TaskSpec(id="oven-clock", env_id="test/oven-v1", instruction="Bake by half past nine.",
                    initial_state={"bake": 2},
                    verifiers=({"type": "timed_write", "expected": [{"tool": "bake", "not_after": "09:30"}]},))
    env = OvenEnv()
    await env.reset(task=task, seed=0)
    with pytest.raises(VerifierError, match="step clock has no time of day: '09:30'"):
        await env.verify()


async def test_a_run_cut_by_the_runs_budget_regrades_the_same():
    from envgym.timed.replay import regrade

    solution = (call("bake"), call("wait", steps=3), Action(text="done"))
    task = oven_task(bake=4, solution=solution, id="oven-regrade")
    trajectory = await run_episode(OvenEnv(max_virtual_time=4), OracleAgent(task), task, seed=2)
    assert trajectory.outcome is Outcome.TRUNCATED
    again = await regrade(task, trajectory, env=OvenEnv)  # the budget comes back from the recorded timeline
    def same(timeline: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in timeline.items() if k != "thinking_policy"}  # replayed as "recorded" charges

    assert not again.passed and same(again.evidence["timeline"]) == same(trajectory.verdict.evidence["timeline"])
    unbounded = await regrade(task, trajectory.model_copy(update={"verdict": None}), env=OvenEnv)
    assert unbounded.evidence["timeline"]["budget"] is None  # charges from the observations, no budget known
