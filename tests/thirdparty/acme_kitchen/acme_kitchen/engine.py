"""acme's kitchen engine, gym-style: ``step(action) -> (obs, reward, done, info)``; it knows nothing of envgym.

An order names ingredients to put on the plate, each made ready first: chopped if it needs chopping, cooked
if it needs cooking. Every :meth:`KitchenEngine.step` is one turn: the action happens, then every stove
cooks what is on it one turn further; a cooked ingredient left on a stove more than ``burn`` turns burns.
Actions are text: ``chop X``, ``cook X`` (put it on a free stove), ``take X`` (off the stove), ``plate X``,
``unplate X``, ``wait``. The episode is done, reward 1, once the plate holds exactly the order, all ready.
An invalid action wastes the turn (``info["error"]``); :meth:`check` says so without taking a turn.
"""

from __future__ import annotations

from dataclasses import dataclass


class EngineError(Exception):
    """An action the kitchen refuses in its current state."""


@dataclass
class Ingredient:
    id: str
    chop: bool = False
    cook: int | None = None
    """Turns on a stove until cooked (None: not cooked)."""
    burn: int = 3
    chopped: bool = False
    cooked_for: int = 0
    over: int = 0
    on: str = "counter"
    """counter, stove or plate."""

    @property
    def burnt(self) -> bool:
        return self.over > self.burn

    @property
    def cooked(self) -> bool:
        return self.cook is not None and self.cooked_for >= self.cook

    @property
    def ready(self) -> bool:
        return (self.chopped or not self.chop) and (self.cook is None or self.cooked) and not self.burnt

    def status(self) -> str:
        if self.burnt:
            return "burnt"
        if self.on == "stove":
            return "cooked" if self.cooked else f"cooking {self.cooked_for}/{self.cook}"
        return "ready" if self.ready else ("chopped" if self.chopped else "raw")


class KitchenEngine:
    def __init__(self, ingredients: dict[str, dict[str, object]], order: list[str], *, stoves: int = 1) -> None:
        self.items = {name: Ingredient(id=name, **spec) for name, spec in sorted(ingredients.items())}  # type: ignore[arg-type]
        if not order or set(order) - set(self.items):
            raise ValueError(f"the order {order} must name some of the ingredients {sorted(self.items)}")
        self.order, self.stoves, self.turn, self.done = sorted(order), stoves, 0, False

    def reset(self) -> tuple[str, dict[str, object]]:
        return self.render(), {"turn": self.turn}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, object]]:
        if self.done:
            raise EngineError("the order is done: reset the kitchen")
        info: dict[str, object] = {"turn": self.turn + 1, "events": []}
        try:
            self._apply(action, perform=True)
        except EngineError as exc:
            info["error"] = str(exc)
        self.turn += 1
        for item in self.items.values():
            if item.on != "stove" or item.burnt:
                continue
            if not item.cooked:
                item.cooked_for += 1
                if item.cooked:
                    info["events"].append((item.id, "cooked"))  # type: ignore[union-attr]
            else:
                item.over += 1
                if item.burnt:
                    info["events"].append((item.id, "burnt"))  # type: ignore[union-attr]
        plate = sorted(i.id for i in self.items.values() if i.on == "plate")
        self.done = plate == self.order and all(self.items[n].ready for n in plate)
        return self.render(), float(self.done), self.done, info

    def check(self, action: str) -> None:
        """Raise :class:`EngineError` if ``action`` is invalid now (nothing changes)."""
        self._apply(action, perform=False)

    def _apply(self, action: str, *, perform: bool) -> None:
        verb, _, name = action.partition(" ")
        if verb == "wait" and not name:
            return
        if verb not in ("chop", "cook", "take", "plate", "unplate"):
            raise EngineError(f"unknown action {action!r}")
        if name not in self.items:
            raise EngineError(f"no ingredient {name!r}; there are {', '.join(self.items)}")
        item = self.items[name]
        if verb == "chop" and (not item.chop or item.chopped or item.on != "counter"):
            raise EngineError(f"{name} cannot be chopped ({item.status()}, on the {item.on})")
        if verb == "cook":
            if item.cook is None or item.cooked or item.on != "counter" or (item.chop and not item.chopped):
                raise EngineError(f"{name} cannot go on a stove ({item.status()}, on the {item.on})")
            if sum(i.on == "stove" for i in self.items.values()) >= self.stoves:
                raise EngineError("every stove is taken")
        if verb == "take" and item.on != "stove":
            raise EngineError(f"{name} is not on a stove")
        if verb == "plate" and (item.on != "counter" or not item.ready):
            raise EngineError(f"{name} is not ready to plate ({item.status()}, on the {item.on})")
        if verb == "unplate" and item.on != "plate":
            raise EngineError(f"{name} is not on the plate")
        if perform:
            if verb == "chop":
                item.chopped = True
            else:
                item.on = {"cook": "stove", "take": "counter", "plate": "plate", "unplate": "counter"}[verb]

    def busy(self) -> bool:
        """Whether a turn would change anything by itself (something is on a stove)."""
        return any(i.on == "stove" for i in self.items.values())

    def cooking(self) -> int:
        return sum(i.on == "stove" and not i.cooked for i in self.items.values())

    def render(self) -> str:
        def where(place: str) -> str:
            return ", ".join(f"{i.id} ({i.status()})" for i in self.items.values() if i.on == place) or "-"

        return (f"Turn {self.turn}. Order: {', '.join(self.order)}.\nCounter: {where('counter')}\n"
                f"Stoves ({self.stoves}): {where('stove')}\nPlate: {where('plate')}")

    def state(self) -> list[dict[str, object]]:
        return [{"id": i.id, "on": i.on, "ready": i.ready, "status": i.status()} for i in self.items.values()]
