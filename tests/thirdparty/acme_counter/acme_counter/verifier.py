"""The verifier kind ``counter_delta``: the benchmark's own ``check(pre_state, post_state)``."""

from __future__ import annotations

from typing import Literal

from envgym import FrozenModel, Verdict
from envgym.verify import VerifyContext


class CounterDeltaSpec(FrozenModel):
    type: Literal["counter_delta"] = "counter_delta"
    name: str
    delta: int
    others_unchanged: bool = True


def check(spec: CounterDeltaSpec, pre: dict[str, int], post: dict[str, int]) -> tuple[bool, str]:
    change = post.get(spec.name, 0) - pre.get(spec.name, 0)
    if change != spec.delta:
        return False, f"{spec.name} changed by {change}, expected {spec.delta}"
    moved = sorted(k for k in {*pre, *post} if k != spec.name and pre.get(k, 0) != post.get(k, 0))
    if spec.others_unchanged and moved:
        return False, f"other counters changed: {', '.join(moved)}"
    return True, "ok"


def _values(view) -> dict[str, int]:
    return {row["name"]: row["value"] for row in view.snapshot()["counters"]} if view is not None else {}


async def check_counter_delta(spec: CounterDeltaSpec, ctx: VerifyContext) -> Verdict:
    passed, detail = check(spec, _values(ctx.initial_state), _values(ctx.state))
    return Verdict(score=1.0 if passed else 0.0, passed=passed, evidence={"counter_delta": detail})
