"""acme_stove's timed env: the turn-based :class:`~acme_stove.engine.StoveEngine` behind envgym's kernel base.

Only envgym's public timed API is used (``envgym.timed``): the world is a :class:`TimedWorld` on a step
clock whose engine is ticked by the kernel once per step while a pot is on a burner (cooking is a
step-based delayed effect that pauses off the burner); ``chop`` is an action that takes two steps; the
kernel supplies the wait tools, thinking (one step per decision here), notifications, the accounting,
the virtual-time budget and the grading context. ``prepare_task`` validates the task's recipe once per
task (the kernel caches it by task hash, off the event loop).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from acme_stove.engine import EngineError, StoveEngine
from envgym.agent import Agent
from envgym.tamper import TamperAgent
from envgym.task import TaskSpec
from envgym.timed import TimedWorld, TimedWorldEnv, ToolFailure, tool
from envgym.types import Action, Observation, ToolCall


class StoveWorld(TimedWorld):
    unit = "step"

    def __init__(self, engine: StoveEngine, *, seed: int, horizon: int) -> None:
        super().__init__(seed=seed, variant="sync", horizon=horizon)
        self.engine = engine

    def ticking(self) -> bool:
        return self.engine.busy()

    def on_tick(self) -> None:
        for pot, what in self.engine.tick():
            self.record_event(f"{pot}:{what}")
            self.notify("alert", pot, f"{pot} is {what}", completes=what == "cooked")

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"pots": self.engine.state()}

    def opportunity(self) -> bool:
        return self.engine.can_act()

    def run(self, action: str, pot: str) -> dict[str, Any]:
        try:
            getattr(self.engine, action)(pot)
        except EngineError as exc:
            raise ToolFailure(str(exc)) from None
        return {"pot": pot, "status": self.engine.pot(pot).status}


class PotArgs(BaseModel):
    pot: str


class NoArgs(BaseModel):
    pass


@tool("read", "Look at the pots: status, turns cooked, whether on a burner.")
def look(world: StoveWorld, args: NoArgs) -> list[dict[str, Any]]:
    return world.engine.state()


@tool("write", "Chop a raw pot's food (takes 2 steps).", duration=2)
def chop(world: StoveWorld, args: PotArgs) -> dict[str, Any]:
    return world.run("chop", args.pot)


@tool("write", "Put a pot on a free burner; it cooks one step per step on it.")
def put_on(world: StoveWorld, args: PotArgs) -> dict[str, Any]:
    return world.run("put_on", args.pot)


@tool("write", "Take a pot off its burner (cooking pauses).")
def take_off(world: StoveWorld, args: PotArgs) -> dict[str, Any]:
    return world.run("take_off", args.pot)


@tool("write", "Plate a cooked pot (off the burner).")
def plate(world: StoveWorld, args: PotArgs) -> dict[str, Any]:
    return world.run("plate", args.pot)


class LateCook(TamperAgent):
    name = "late-cook"
    description = "waits until the task's deadline has passed, then does exactly what the reference does"

    async def reset(self, observation: Observation, info: dict[str, Any]) -> None:
        await super().reset(observation, info)
        self._steps = [a for a in self.task.solution or () if a.tool_calls]

    async def act(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            return Action(tool_calls=(ToolCall.of("wait", steps=int(self.task.initial_state["deadline"]) + 1),))
        if self.turn - 2 < len(self._steps):
            return self._steps[self.turn - 2]
        return Action(text="Plated on time.")


class StoveEnv(TimedWorldEnv):
    """``acme/stove-v1``: see the module docstring."""

    unit = "step"
    tools = (look, chop, put_on, take_off, plate)
    tamper_agents: ClassVar[tuple[type[Agent], ...]] = (LateCook,)

    def __init__(self, *, thinking: Any = "steps:1", **time: Any) -> None:  # budgets: max_virtual_time=, ...
        super().__init__(thinking=thinking, **time)

    def prepare_task(self, task: TaskSpec) -> dict[str, Any]:
        state = task.initial_state
        StoveEngine(state["pots"], burners=int(state.get("burners", 1)))  # refuses a bad recipe once, here
        return {"pots": state["pots"], "burners": int(state.get("burners", 1))}

    def build_world(self, task: TaskSpec, *, seed: int, prepared: dict[str, Any]) -> StoveWorld:
        engine = StoveEngine(prepared["pots"], burners=prepared["burners"])
        return StoveWorld(engine, seed=seed, horizon=int(task.initial_state.get("horizon", 60)))

    def world_policy(self) -> str:
        return ("You are the cook. Chop each pot, put it on a burner and take it off once cooked, before it burns; "
                "then plate it. A pot cooks only while it is on a burner.")
