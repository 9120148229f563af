"""Seeded latency distributions for slow tools: how long an asynchronous call takes to answer.

Every distribution is bounded (``high`` is a hard ceiling), so a task can promise "every quote is back
within 10 minutes" and a reference solution can rely on it. Draws come from the env's per-episode
``random.Random`` in call order, so the same seed and the same actions give the same latencies::

    {"dist": "fixed", "seconds": 30}
    {"dist": "uniform", "low": 60, "high": 300}
    {"dist": "triangular", "low": 60, "mode": 90, "high": 300}
    {"dist": "lognormal", "median": 90, "sigma": 0.5, "low": 30, "high": 600}
"""

from __future__ import annotations

import math
import random
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from envgym.types import FrozenModel


class FixedLatency(FrozenModel):
    dist: Literal["fixed"] = "fixed"
    seconds: float = Field(ge=0)

    @property
    def high(self) -> float:
        return self.seconds

    def draw(self, rng: random.Random) -> float:
        return self.seconds


class UniformLatency(FrozenModel):
    dist: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> UniformLatency:
        if self.high < self.low:
            raise ValueError("high must be >= low")
        return self

    def draw(self, rng: random.Random) -> float:
        return round(rng.uniform(self.low, self.high), 3)


class TriangularLatency(FrozenModel):
    dist: Literal["triangular"] = "triangular"
    low: float = Field(ge=0)
    mode: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> TriangularLatency:
        if not self.low <= self.mode <= self.high:
            raise ValueError("need low <= mode <= high")
        return self

    def draw(self, rng: random.Random) -> float:
        return round(rng.triangular(self.low, self.high, self.mode), 3)


class LognormalLatency(FrozenModel):
    dist: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    sigma: float = Field(default=0.5, ge=0)
    low: float = Field(default=0.0, ge=0)
    high: float

    def draw(self, rng: random.Random) -> float:
        value = rng.lognormvariate(math.log(self.median), self.sigma)
        return round(min(self.high, max(self.low, value)), 3)


Latency = Annotated[FixedLatency | UniformLatency | TriangularLatency | LognormalLatency,
                    Field(discriminator="dist")]
_adapter: TypeAdapter[Any] = TypeAdapter(Latency)
INSTANT = FixedLatency(seconds=0.0)


def latency(value: Any) -> Any:
    """A latency distribution from its dict form (a number means fixed seconds)."""
    if isinstance(value, int | float):
        return FixedLatency(seconds=float(value))
    return _adapter.validate_python(value)
