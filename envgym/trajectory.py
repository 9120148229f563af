"""Trajectories: what happened in one episode, step by step, as data.

A :class:`Trajectory` is written by the rollout loop and read by records, the leaderboard and trainers.
``token_data`` holds token-level segments (prompt ids, completion ids, logprobs, policy version) when the
agent records them. ``schema_version`` is :data:`~envgym.types.TRAJECTORY_SCHEMA_VERSION`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from envgym.types import (
    TRAJECTORY_SCHEMA_VERSION,
    Action,
    Blame,
    FrozenModel,
    Observation,
    Outcome,
    Timing,
    Usage,
    Verdict,
)


class StepRecord(FrozenModel):
    index: int
    action: Action
    observation: Observation
    reward: float
    agent_s: float
    env_s: float


class Trajectory(FrozenModel):
    schema_version: Literal[1] = TRAJECTORY_SCHEMA_VERSION
    task_id: str
    task_hash: str
    env_id: str
    seed: int | None = None
    initial_observation: Observation | None = None
    steps: tuple[StepRecord, ...] = ()
    outcome: Outcome
    verdict: Verdict | None = None
    reward: float = 0.0
    usage: Usage = Usage()
    timing: Timing = Timing()
    error: str | None = None
    error_type: str | None = None
    blame: Blame | None = None
    """Whose failure ``error`` was (None when the episode ended without one)."""
    token_data: list[dict[str, Any]] = Field(default_factory=list)
    host: str | None = None
    """Where the episode ran when not in this process (the Ray backend's host label; None locally)."""

    @property
    def final_answer(self) -> str | None:
        return next((s.action.text for s in reversed(self.steps) if s.action.is_final), None)
