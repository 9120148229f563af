"""What happened when: the timeline of one timed episode, as data.

Times are virtual seconds since the episode started (or, in a world on a step clock, ``unit="step"``,
steps since the start); ``day_start_s`` maps seconds to a time of day, so a task can say "before 14:00".
Every entry carries ``seq``, its place in the causal order shared by world events and the agent's calls
(two things at the same virtual time are still ordered). A call has two places: when it was *issued* and
when it was *done* (its result or effect; equal for an instant call).

:class:`Timeline` is what the timed verifier grades and what a verdict's evidence keeps, so a recorded
run can be re-graded and its efficiency read without the agent. ``Timeline.metrics()`` defines:

- ``virtual_time_s``: start to end of the episode (the end includes draining calls still in flight);
- ``thinking_s``: time charged to the agent's deciding (the thinking-cost policy);
- ``waiting_s``: time spent in ``wait``/``wait_for_notification`` and in blocking (synchronous) calls;
- ``idle_s``: the part of ``waiting_s`` during which none of the agent's own calls was in flight;
- ``opportunity_idle_s``: the part of ``waiting_s`` during which the world said another action was
  available (:meth:`envgym.timed.world.TimedWorld.opportunity`); None when the world cannot say;
- ``acting_s``: time the agent spent inside actions that take time (tools with a ``duration``);
- ``time_to_goal_s``: filled in by the verifier: when the goal was reached for good (the last expected
  write done, the last change that made a final-state check hold), for write and state goals alike.

``state_changes`` logs, from the start, each change of a world path a task's ``final_state`` checks name,
so the time a state goal was reached can be read after the fact.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from envgym.types import FrozenModel

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


def parse_time_of_day(text: str) -> float:
    """``"14:00"`` or ``"09:05:30"`` -> seconds since midnight."""
    match = _CLOCK.match(text.strip())
    if not match:
        raise ValueError(f"not a time of day (HH:MM or HH:MM:SS): {text!r}")
    hours, minutes, seconds = int(match[1]), int(match[2]), int(match[3] or 0)
    if hours > 47 or minutes > 59 or seconds > 59:
        raise ValueError(f"not a time of day: {text!r}")
    return float(hours * 3600 + minutes * 60 + seconds)


def format_time_of_day(seconds: float) -> str:
    """Seconds since midnight -> ``"HH:MM:SS"`` (rounded down to the second)."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def format_clock(t: float, unit: str = "s", day_start_s: float = 0.0) -> str:
    """How a virtual time reads: a time of day (``"09:30:00"``) on a seconds clock, ``"step 12"`` on a step clock."""
    if unit == "step":
        return f"step {int(t)}"
    return format_time_of_day(day_start_s + t)


def to_virtual(when: str | float, unit: str = "s", day_start_s: float = 0.0) -> float:
    """A time of day (seconds clock only) or a number -> virtual time since the start."""
    if isinstance(when, str):
        if unit == "step":
            raise ValueError(f"a step clock has no time of day: {when!r} (give a step number)")
        return parse_time_of_day(when) - day_start_s
    return float(when)


class Notification(FrozenModel):
    """Something the world tells the agent: a message, an email, a tool's late result, an alarm."""

    seq: int
    time: float
    clock: str
    kind: Literal["tool_result", "message", "email", "alert", "system"]
    source: str
    """Who or what it is from: a contact, an appliance, or a call's handle (``h3``)."""
    content: str


class TimedCall(FrozenModel):
    """One tool call with its place on the timeline."""

    index: int
    step: int
    name: str
    kind: Literal["read", "write", "control", "unknown"]
    arguments: dict[str, Any] | None
    ok: bool
    error: str | None = None
    handle: str | None = None
    issued_at: float
    issued_seq: int
    done_at: float | None = None
    done_seq: int | None = None
    """None while the call is still in flight."""


class TimelineEvent(FrozenModel):
    """A world event that fired."""

    seq: int
    id: str
    time: float
    kind: str = "event"


class StepTiming(FrozenModel):
    step: int
    started_at: float
    """Virtual time when the action took effect (after thinking)."""
    ended_at: float
    thinking_s: float
    waiting_s: float = 0.0
    idle_s: float = 0.0
    acting_s: float = 0.0
    """Time spent inside actions that take time (a tool's ``duration``)."""
    opportunity_idle_s: float | None = None
    """Waiting while the world said another action was available; None when it cannot say."""


class StateChange(FrozenModel):
    """A watched world path took a new value at ``time`` (its initial value is logged at time 0)."""

    path: str
    time: float
    value: Any = None


class Timeline(FrozenModel):
    unit: Literal["s", "step"] = "s"
    """What a unit of virtual time is: a second, or a step of a step clock."""
    day_start_s: float = 0.0
    end_s: float = 0.0
    variant: str = "async"
    seed: int = 0
    calls: tuple[TimedCall, ...] = ()
    events: tuple[TimelineEvent, ...] = ()
    notifications: tuple[Notification, ...] = ()
    steps: tuple[StepTiming, ...] = ()
    thinking_policy: dict[str, Any] = Field(default_factory=dict)
    state_changes: tuple[StateChange, ...] = ()
    budget: float | None = None
    """The episode's virtual-time budget (the task's, capped by the run's), if any."""
    ended_by: Literal["final_answer", "world", "horizon", "virtual_time_budget"] | None = None
    """Why the episode ended: the agent's final message, the world (its ``finished()``), the world's horizon
    or the budget; None while it goes on (or graded unended)."""
    end_reason: str | None = None
    """The world's reason when ``ended_by`` is ``"world"``."""

    def clock(self, t: float) -> str:
        return format_clock(t, self.unit, self.day_start_s)

    def to_virtual(self, when: str | float) -> float:
        """A time of day (``"14:00"``) or virtual time -> virtual time since the start."""
        return to_virtual(when, self.unit, self.day_start_s)

    def event(self, event_id: str) -> TimelineEvent | None:
        return next((e for e in self.events if e.id == event_id), None)

    def metrics(self) -> dict[str, Any]:
        """The efficiency metrics (see the module docstring); times are in the timeline's ``unit``."""
        known = [s.opportunity_idle_s for s in self.steps if s.opportunity_idle_s is not None]
        return {
            "virtual_time_s": round(self.end_s, 3),
            "thinking_s": round(sum(s.thinking_s for s in self.steps), 3),
            "waiting_s": round(sum(s.waiting_s for s in self.steps), 3),
            "idle_s": round(sum(s.idle_s for s in self.steps), 3),
            "opportunity_idle_s": round(sum(known), 3) if known else None,
            "acting_s": round(sum(s.acting_s for s in self.steps), 3),
            "steps": len(self.steps),
            "tool_calls": len(self.calls),
            "events_fired": len(self.events),
            "unit": self.unit,
        }

    def thinking_charges(self) -> list[float]:
        """Per-step thinking charges, for re-running the episode under a recorded policy."""
        return [s.thinking_s for s in self.steps]
