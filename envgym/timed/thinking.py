"""Thinking costs time: how far a timed world's clock moves while the agent decides.

A policy is typed configuration (a discriminated union on ``type``), recorded in every timeline. Before an
action takes effect the world runs for ``policy.cost(sample)`` virtual seconds, where the sample holds what
the env could observe about the decision:

- ``none``: 0 s (the world waits for the agent; the classic turn-based setting);
- ``fixed``: ``seconds`` per step, whatever the agent did (the default, 2 s: deterministic for any agent);
- ``tokens``: ``base_s + seconds_per_token * completion tokens + seconds_per_prompt_token * prompt tokens``
  of the usage spent on this action. The env learns it from ``step(action, usage=...)`` or from a usage
  source attached with ``env.attach_usage(lambda: agent.usage)`` (cumulative; the env takes differences).
  Without either it charges ``base_s`` only (the oracle and scripted agents have no usage);
- ``wall``: the wall-clock seconds between the env returning the previous step and receiving this action,
  times ``scale`` (the env's injected clock measures them; inject a SimClock to test it);
- ``recorded``: the charges of a recorded run, step by step (then 0): how a run is replayed and re-graded;
- ``steps``: ``steps`` ticks of the world's clock per decision, plus one more per ``tokens_per_step``
  completion tokens when set (and the usage is known): thinking measured in the world's own steps. A tick is
  one step on a step clock (``unit="step"``) and the world's ``tick`` seconds on a seconds clock.

Charges are in the world's unit of time: seconds, or steps on a step clock (``fixed:2`` there is 2 steps).
The default is ``fixed:2`` on both clocks, unless the env class names its own (``default_thinking``): 2 s a
decision, or **2 steps a decision on a step clock**. It is stated where the agent and the reader see it: the
policy text (:func:`describe_charge`), ``info["thinking"]`` and every timeline. A turn-based engine should
name its charge (``default_thinking = "steps:1"``, or ``"none"`` for the classic turn-based setting).

Real-time mode (``TimedEnv(realtime=True)``) is not a policy: there the world's clock *is* the wall clock
(scaled by ``speed``), so thinking, waiting and the env's own work all cost what they cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from envgym.types import FrozenModel, Usage


@dataclass(frozen=True)
class ThinkingSample:
    """What the env observed about one decision."""

    step: int
    wall_s: float
    usage: Usage | None
    tick: float = 1.0
    """The length of one step of the world's clock, in its unit (1 on a step clock)."""


class NoThinkingCost(FrozenModel):
    type: Literal["none"] = "none"

    def cost(self, sample: ThinkingSample) -> float:
        return 0.0


class FixedThinkingCost(FrozenModel):
    type: Literal["fixed"] = "fixed"
    seconds: float = Field(default=2.0, ge=0)

    def cost(self, sample: ThinkingSample) -> float:
        return self.seconds


class TokenThinkingCost(FrozenModel):
    type: Literal["tokens"] = "tokens"
    seconds_per_token: float = Field(default=0.02, ge=0)
    """Decode speed: 0.02 s/token is 50 tokens/s."""
    seconds_per_prompt_token: float = Field(default=0.0, ge=0)
    base_s: float = Field(default=0.0, ge=0)

    def cost(self, sample: ThinkingSample) -> float:
        if sample.usage is None:
            return self.base_s
        return (self.base_s + self.seconds_per_token * sample.usage.completion_tokens
                + self.seconds_per_prompt_token * sample.usage.prompt_tokens)


class WallThinkingCost(FrozenModel):
    type: Literal["wall"] = "wall"
    scale: float = Field(default=1.0, ge=0)

    def cost(self, sample: ThinkingSample) -> float:
        return max(0.0, sample.wall_s) * self.scale


class RecordedThinkingCost(FrozenModel):
    type: Literal["recorded"] = "recorded"
    charges: tuple[float, ...] = ()

    def cost(self, sample: ThinkingSample) -> float:
        return self.charges[sample.step] if sample.step < len(self.charges) else 0.0


class StepsThinkingCost(FrozenModel):
    type: Literal["steps"] = "steps"
    steps: int = Field(default=1, ge=0)
    """Ticks charged for every decision."""
    tokens_per_step: int | None = Field(default=None, ge=1)
    """When set, one more tick per this many completion tokens (rounded up), if the usage is known."""

    def cost(self, sample: ThinkingSample) -> float:
        ticks = self.steps
        if self.tokens_per_step is not None and sample.usage is not None:
            ticks += math.ceil(sample.usage.completion_tokens / self.tokens_per_step)
        return ticks * sample.tick


ThinkingPolicy = Annotated[
    NoThinkingCost | FixedThinkingCost | TokenThinkingCost | WallThinkingCost | RecordedThinkingCost
    | StepsThinkingCost,
    Field(discriminator="type"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(ThinkingPolicy)
DEFAULT_THINKING = FixedThinkingCost()


def thinking_policy(value: Any) -> Any:
    """A policy from a policy, a dict, or a short string: ``none``, ``fixed:2``, ``tokens:0.02``, ``wall:1``,
    ``steps:1``."""
    if value is None:
        return DEFAULT_THINKING
    if isinstance(value, str):
        kind, _, number = value.partition(":")
        field_name = {"fixed": "seconds", "tokens": "seconds_per_token", "wall": "scale", "steps": "steps"}.get(kind)
        try:
            parsed = (int(number) if kind == "steps" else float(number)) if number and field_name else None
        except ValueError:
            raise ValueError(f"not a thinking policy: {value!r} (e.g. none, fixed:2, tokens:0.02, wall:1, "
                             "steps:1)") from None
        value = {"type": kind, **({field_name: parsed} if parsed is not None else {})}
    if isinstance(value, dict):
        return _adapter.validate_python(value)
    return _adapter.validate_python(value.model_dump())


def describe_charge(policy: Any, unit: str = "s", tick: float = 1.0) -> str:
    """What one decision costs under ``policy``, in words, on a clock in ``unit`` whose tick is ``tick``
    (the agent is told this)."""
    steps = unit == "step"

    def amount(value: float) -> str:
        return f"{value:g} step{'s' if value != 1 else ''}" if steps else f"{value:g} s"

    match policy:
        case NoThinkingCost():
            return "deciding costs no time"
        case FixedThinkingCost(seconds=value):
            return f"each decision costs {amount(value)}"
        case TokenThinkingCost():
            return (f"each decision costs {amount(policy.base_s)} plus {amount(policy.seconds_per_token)} per "
                    "generated token")
        case WallThinkingCost(scale=scale):
            return f"each decision costs the wall-clock time you take{f' times {scale:g}' if scale != 1 else ''}"
        case RecordedThinkingCost():
            return "each decision costs what it cost in the recorded run"
        case StepsThinkingCost(steps=ticks, tokens_per_step=per):
            text = f"each decision costs {amount(ticks * tick)}"
            return text + (f" plus {amount(tick)} per {per} generated tokens" if per is not None else "")
    return f"thinking costs time ({policy.type} policy)"


def usage_delta(now: Usage, before: Usage) -> Usage:
    """The usage spent between two cumulative readings."""
    return Usage(prompt_tokens=now.prompt_tokens - before.prompt_tokens,
                 completion_tokens=now.completion_tokens - before.completion_tokens,
                 calls=now.calls - before.calls, cost_usd=now.cost_usd - before.cost_usd)
