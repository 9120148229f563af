"""acme's turn-based kitchen engine: it knows nothing of envgym.

Pots of food are chopped, put on a burner, cooked and plated. The engine counts time in turns: each call
of :meth:`StoveEngine.tick` is one turn, in which every pot on a burner cooks one turn further. Cooking is
a delayed effect that *pauses*: a pot taken off its burner keeps its progress and goes on from there when
put back. A cooked pot left on a burner for more than ``hold`` turns burns. Actions are instant here;
the env built on it decides which take time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


class EngineError(Exception):
    """An action the engine refuses (the state does not allow it)."""


@dataclass
class Pot:
    id: str
    turns: int
    """Turns on a burner until cooked."""
    hold: int = 3
    """Turns a cooked pot may stay on a burner before it burns."""
    chopped: bool = False
    on_burner: bool = False
    cooked_for: int = 0
    over: int = 0
    status: str = "raw"
    """raw -> chopped -> cooking -> cooked -> plated, or burnt."""


class StoveEngine:
    def __init__(self, pots: dict[str, dict[str, int]], *, burners: int = 1) -> None:
        if burners < 1:
            raise ValueError("a stove has at least one burner")
        self.burners = burners
        self.pots = {name: Pot(id=name, turns=int(spec["turns"]), hold=int(spec.get("hold", 3)))
                     for name, spec in sorted(pots.items())}
        if any(p.turns < 1 for p in self.pots.values()):
            raise ValueError("a pot cooks for at least one turn")

    def pot(self, name: str) -> Pot:
        if name not in self.pots:
            raise EngineError(f"no pot {name!r}; the pots are {', '.join(self.pots)}")
        return self.pots[name]

    # -- actions -------------------------------------------------------------------------------------
    def chop(self, name: str) -> None:
        pot = self.pot(name)
        if pot.status != "raw":
            raise EngineError(f"{name} is {pot.status}, not raw")
        pot.chopped, pot.status = True, "chopped"

    def put_on(self, name: str) -> None:
        pot = self.pot(name)
        if pot.on_burner:
            raise EngineError(f"{name} is already on a burner")
        if pot.status not in ("chopped", "cooking", "cooked"):
            raise EngineError(f"{name} is {pot.status}: chop it first" if pot.status == "raw" else
                              f"{name} is {pot.status}")
        if sum(p.on_burner for p in self.pots.values()) >= self.burners:
            raise EngineError("every burner is taken; take a pot off first")
        pot.on_burner = True
        if pot.status == "chopped":
            pot.status = "cooking"

    def take_off(self, name: str) -> None:
        pot = self.pot(name)
        if not pot.on_burner:
            raise EngineError(f"{name} is not on a burner")
        pot.on_burner = False

    def plate(self, name: str) -> None:
        pot = self.pot(name)
        if pot.status != "cooked":
            raise EngineError(f"{name} is {pot.status}, not cooked")
        if pot.on_burner:
            raise EngineError(f"take {name} off the burner first")
        pot.status = "plated"

    # -- time ----------------------------------------------------------------------------------------
    def busy(self) -> bool:
        """Whether a turn would change anything (some pot is on a burner)."""
        return any(p.on_burner for p in self.pots.values())

    def tick(self) -> list[tuple[str, str]]:
        """One turn; returns what happened as ``(pot, "cooked" | "burnt")``."""
        happened = []
        for pot in self.pots.values():
            if not pot.on_burner or pot.status == "burnt":
                continue
            if pot.status == "cooking":
                pot.cooked_for += 1
                if pot.cooked_for >= pot.turns:
                    pot.status = "cooked"
                    happened.append((pot.id, "cooked"))
            elif pot.status == "cooked":
                pot.over += 1
                if pot.over > pot.hold:
                    pot.status = "burnt"
                    happened.append((pot.id, "burnt"))
        return happened

    def can_act(self) -> bool:
        """Whether some useful action is possible now: chop, put a pot on a free burner, take off, plate."""
        free = sum(p.on_burner for p in self.pots.values()) < self.burners
        return any(p.status == "raw" or (p.status == "cooked" and p.on_burner)
                   or (p.status == "cooked" and not p.on_burner)
                   or (free and not p.on_burner and p.status in ("chopped", "cooking"))
                   for p in self.pots.values())

    def state(self) -> list[dict[str, object]]:
        return [asdict(p) for p in self.pots.values()]
