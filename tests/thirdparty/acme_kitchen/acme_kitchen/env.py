"""acme_kitchen's timed env: the gym-style :class:`~acme_kitchen.engine.KitchenEngine` behind envgym's timed
base, with no override of ``reset`` or ``step``.

One engine turn is one step of the world's clock. Each action tool is checked now (a refusal costs no time)
and performed as the world's next tick, by the engine's own ``step(action)`` (``at_tick``); while something
cooks and the agent does not act, the kernel ticks the engine with ``wait``. Deciding costs nothing (the
classic turn-based setting: ``default_thinking = "none"``), so time is the engine's turns. The engine's
``done`` ends the episode (``finished``), its opening view is the first observation (``describe``), its text
view reaches the agent as plain text.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from acme_kitchen.engine import EngineError, KitchenEngine
from envgym.plugin import TaskSpec
from envgym.plugin.timed import TimedWorld, TimedWorldEnv, ToolFailure, tool


class KitchenWorld(TimedWorld):
    unit = "step"

    def __init__(self, engine: KitchenEngine, *, seed: int, variant: str, horizon: int) -> None:
        super().__init__(seed=seed, variant=variant, horizon=horizon)
        self.engine, self.done = engine, False
        self.opening, _ = engine.reset()

    def play(self, action: str) -> str:
        """One engine turn; its events become notifications (a cooked ingredient finishes its source)."""
        if action.startswith("cook "):
            self.reopen(action.removeprefix("cook "))
        obs, _reward, self.done, info = self.engine.step(action)
        for item, what in info["events"]:
            self.record_event(f"{item}:{what}")
            self.notify("alert", item, f"{item} is {what}", completes=what == "cooked")
        return obs

    def refuse_invalid(self, action: str) -> None:
        try:
            self.engine.check(action)
        except EngineError as exc:
            raise ToolFailure(str(exc)) from None

    def describe(self) -> str:
        return self.opening

    def finished(self) -> str | None:
        return "the order is plated" if self.done else None

    def ticking(self) -> bool:
        return self.engine.busy()

    def on_tick(self) -> None:
        self.play("wait")

    def pending(self) -> int:
        return self.engine.cooking()

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {"items": self.engine.state()}


class Item(BaseModel):
    item: str


class NoArgs(BaseModel):
    pass


def _turn(verb: str, text: str) -> Any:
    def perform(world: KitchenWorld, args: Item) -> str:
        return world.play(f"{verb} {args.item}")

    perform.__name__ = verb
    return tool("write", f"{text} (one turn).", check=lambda world, args: world.refuse_invalid(f"{verb} {args.item}"),
                at_tick=True)(perform)


@tool("read", "Look at the kitchen (no time).")
def look(world: KitchenWorld, args: NoArgs) -> str:
    return world.engine.render()


class KitchenEnv(TimedWorldEnv):
    """``acme/kitchen-v1``: see the module docstring."""

    unit = "step"
    default_thinking = "none"
    tools = (look, _turn("chop", "Chop an ingredient on the counter"),
             _turn("cook", "Put an ingredient on a free stove"), _turn("take", "Take an ingredient off its stove"),
             _turn("plate", "Plate a ready ingredient"), _turn("unplate", "Take an ingredient off the plate"))

    def build_world(self, task: TaskSpec, *, seed: int, prepared: Any) -> KitchenWorld:
        state = task.initial_state
        engine = KitchenEngine(state["ingredients"], state["order"], stoves=int(state.get("stoves", 1)))
        return KitchenWorld(engine, seed=seed, variant=state["variant"], horizon=int(state.get("horizon", 60)))

    def world_policy(self) -> str:
        return ("You are the cook. Plate exactly the order, every ingredient ready: chopped if it needs chopping, "
                "cooked (then taken off the stove) if it needs cooking. Cooked food left on a stove burns.")
