"""The data that crosses envgym's boundaries: actions, observations, outcomes, usage, verdicts.

Everything here is a frozen pydantic model with ``extra="forbid"``: data, no behaviour. Actions follow
OpenAI's chat format (a message text and/or function tool calls whose ``arguments`` are the raw JSON
string the model produced, so malformed JSON survives to become an error observation). Observations carry
tool results and ``last_action_error``: an agent's bad action is an observation, never an exception.
The schema versions of the four persisted formats (tasks, trajectories, records, leaderboards) are
separate constants here, one per format.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

TASK_SCHEMA_VERSION = 1
"""``schema_version`` of :class:`~envgym.task.TaskSpec` (task files, ``tasks/**/*.jsonl``). It is part of
every task's content hash, so raising it changes every task hash."""
TRAJECTORY_SCHEMA_VERSION = 1
"""``schema_version`` of :class:`~envgym.trajectory.Trajectory` (an episode, step by step)."""
RECORD_SCHEMA_VERSION = 1
"""``schema_version`` of :class:`~envgym.record.ResultRecord` (the lines of ``records.jsonl``)."""
LEADERBOARD_SCHEMA_VERSION = 1
"""``schema_version`` of :class:`~envgym.leaderboard.Leaderboard` (``leaderboard.json``)."""
# Each format moves on its own: a new trajectory field does not re-version task files or their hashes.
# The training-sample format has its own, ``envgym.rl.samples.SAMPLE_SCHEMA_VERSION`` (RL code stays in rl/).


class FrozenModel(BaseModel):
    """Base of every envgym data model: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy without the original's cached properties (a ``functools.cached_property`` such as a task's
        content hash lives in ``__dict__``, which pydantic copies): a copy with an ``update`` computes its own."""
        copy = super().model_copy(update=update, deep=deep)
        for klass in type(self).__mro__:
            for name, value in vars(klass).items():
                if isinstance(value, functools.cached_property):
                    copy.__dict__.pop(name, None)
        return copy


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every content hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


class ToolCall(FrozenModel):
    """One OpenAI-style function call. ``arguments`` is the raw JSON text, exactly as produced.

    Without an explicit ``id``, the id is derived from the name and arguments, so task files built in
    code are reproducible (the same call always gets the same id and the task the same hash).
    """

    id: str = ""
    name: str
    arguments: str = "{}"

    @model_validator(mode="after")
    def _default_id(self) -> ToolCall:
        if not self.id:
            digest = hashlib.sha256(f"{self.name}\0{self.arguments}".encode()).hexdigest()[:12]
            object.__setattr__(self, "id", f"call_{digest}")
        return self

    @classmethod
    def of(cls, name: str, /, **arguments: Any) -> ToolCall:
        """Build a call from Python values (the arguments are serialised to JSON)."""
        return cls(name=name, arguments=json.dumps(arguments, ensure_ascii=False))

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class Action(FrozenModel):
    """What an agent does in one step: tool calls, a message to the user, or both.

    A message without tool calls is the agent's final answer and ends a tool-use episode.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def say(cls, text: str) -> Action:
        return cls(text=text)

    @classmethod
    def call(cls, name: str, /, **arguments: Any) -> Action:
        return cls(tool_calls=(ToolCall.of(name, **arguments),))

    @property
    def is_final(self) -> bool:
        return not self.tool_calls


class ToolResult(FrozenModel):
    """The environment's answer to one tool call; ``error`` is set when the call was rejected."""

    call_id: str
    name: str
    content: str
    error: str | None = None


class Observation(FrozenModel):
    """What the agent sees after reset or a step. Families may subclass to add fields."""

    text: str = ""
    tool_results: tuple[ToolResult, ...] = ()
    last_action_error: str | None = None


class Outcome(enum.StrEnum):
    """How an episode ended. ``infra_error`` is counted apart from failures everywhere."""

    SUCCESS = "success"
    FAILURE = "failure"
    TRUNCATED = "truncated"
    INFRA_ERROR = "infra_error"


class Blame(enum.StrEnum):
    """Whose failure ended an episode early, attributed once by the rollout (see ``envgym.rollout``).

    Only ``infra`` (the engine, the model endpoint, the host: nothing the agent could cause) makes the
    outcome ``infra_error``, which leaves the leaderboard's denominator; the others are failures.
    """

    AGENT = "agent"
    ENV = "env"
    VERIFIER = "verifier"
    INFRA = "infra"


class Usage(FrozenModel):
    """Model usage accumulated by an agent."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cost_usd=self.cost_usd + other.cost_usd,
        )


class Timing(FrozenModel):
    """Seconds spent in an episode, split between the environment and the agent."""

    started_at: float = 0.0
    wall_s: float = 0.0
    env_s: float = 0.0
    agent_s: float = 0.0


class Limits(FrozenModel):
    """Per-task bounds. ``None`` means no bound."""

    max_steps: int = Field(default=30, ge=1)
    episode_timeout_s: float | None = Field(default=300.0, gt=0)
    step_timeout_s: float | None = Field(default=120.0, gt=0)
    max_virtual_time: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """A time-evolving env's budget of *virtual* time (seconds, or steps on a step clock): the episode is
    truncated when its world's clock reaches it (:mod:`envgym.timed.env`). Left out of the serialised
    form while None, so tasks without one keep their content hash."""

    @model_serializer(mode="wrap")
    def _omit_unset_budget(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("max_virtual_time") is None:
            data.pop("max_virtual_time", None)
        return data


class CriterionResult(FrozenModel):
    """One graded criterion inside a verdict."""

    name: str
    score: float = Field(ge=0.0, le=1.0)
    weight: float = 1.0
    passed: bool
    detail: str = ""


class Verdict(FrozenModel):
    """The grade of one episode: a score in [0, 1], pass/fail, the breakdown and the evidence."""

    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    criteria: tuple[CriterionResult, ...] = ()
    evidence: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def combine(cls, verdicts: list[Verdict], *, mode: str = "all") -> Verdict:
        """Merge verdicts: ``all`` passes iff every one passes (score = product), ``any`` iff one does."""
        if not verdicts:
            return cls(score=1.0, passed=True)
        criteria = tuple(c for v in verdicts for c in v.criteria)
        evidence: dict[str, Any] = {}
        for i, verdict in enumerate(verdicts):
            for key, value in verdict.evidence.items():
                evidence[key if key not in evidence else f"{key}#{i}"] = value
        if mode == "any":
            best = max(verdicts, key=lambda v: (v.passed, v.score))
            return cls(score=best.score, passed=best.passed, criteria=criteria, evidence=evidence)
        score = 1.0
        for verdict in verdicts:
            score *= verdict.score
        return cls(score=score, passed=all(v.passed for v in verdicts), criteria=criteria, evidence=evidence)
