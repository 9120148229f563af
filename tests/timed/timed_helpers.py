"""Small builders for timed tests: ad-hoc tasks over the bundled scenarios."""

from __future__ import annotations

from typing import Any

from envgym.task import TaskSpec
from envgym.types import Action, ToolCall

ANY_WRITE = [{"type": "timed_write", "expected": [], "allow_collateral": True}]


def timed_task(scenario: str, *, variant: str = "async", world: dict[str, Any] | None = None,
               events: list[dict[str, Any]] | None = None, latency: dict[str, Any] | None = None,
               verifiers: list[dict[str, Any]] | None = None, horizon_s: float = 4 * 3600,
               task_id: str = "t") -> TaskSpec:
    return TaskSpec.model_validate({
        "id": task_id, "env_id": f"timed/{scenario}-v1", "instruction": "Do the thing.",
        "initial_state": {"variant": variant, "start": "09:00", "horizon_s": horizon_s, "world": world or {},
                          "events": events or [], "latency": latency or {}},
        "verifiers": verifiers or ANY_WRITE})


def call(name: str, /, **args: Any) -> Action:
    return Action.call(name, **args)


def calls(*pairs: tuple[str, dict[str, Any]]) -> Action:
    return Action(tool_calls=tuple(ToolCall.of(name, **args) for name, args in pairs))


BACKOFFICE_WORLD = {
    "quotes": {"acme:bolts": {"id": "acme:bolts", "unit_price": 0.42},
               "boltco:bolts": {"id": "boltco:bolts", "unit_price": 0.39}},
    "stock": {"north:sku-7": {"id": "north:sku-7", "units": 120}},
    "credit": {}, "reports": {}, "orders": {}, "reservations": {}, "decisions": {}, "sent": {},
}
